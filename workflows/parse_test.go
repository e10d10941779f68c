package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"switchboard/workflows"
)

func TestParseReadsEveryStepType(t *testing.T) {
	t.Parallel()
	doc, err := workflows.Parse([]byte(`
name: Follow up
trigger:
  type: event
  event: turn.completed
  condition: event.data.finish_reason == "stop"
timeout: 48h
steps:
  - id: open
    type: if
    condition: conversation != null && conversation.status == "open"
    else: end
  - id: pause
    type: wait
    until: next_local(now, "09:00", "America/New_York")
  - id: crm
    type: http_request
    method: put
    url: https://crm.example.com/notes/{{ run.id }}
    headers: {X-Source: switchboard}
    body: '{{ to_json({"conversation": event.data.conversation_id}) }}'
    retries: 5
  - {id: tag, type: apply_label, label: followed-up}
  - id: who
    type: update_contact
    set:
      name: "{{ input.name }}"
  - {id: sum, type: agent_prompt, model: alpha-large, prompt: Summarize}
  - id: mail
    type: email
    to: ops@example.com
    subject: "Run {{ run.id }}"
    body: "{{ steps.sum.text }}"
  - {id: sms, type: send_message, channel: sms, body: "Still there?"}
`))
	require.NoError(t, err)
	require.Equal(t, "Follow up", doc.Name)
	require.True(t, doc.Enabled)
	require.Equal(t, 48*time.Hour, doc.Timeout)
	require.Len(t, doc.Steps, 8)
	require.Equal(t, "PUT", doc.Steps[2].Method)
	require.Equal(t, 5, doc.Steps[2].Retries)
	require.Equal(t, 0, doc.Steps[3].Retries, "a step that stays in the database is not retried")
	ok, err := doc.Trigger.Condition.Bool(context.Background(), workflows.Vars{Event: map[string]any{"data": map[string]any{"finish_reason": "stop"}}})
	require.NoError(t, err)
	require.True(t, ok)
	body, err := doc.Steps[2].Body.Render(context.Background(), workflows.Vars{Event: map[string]any{"data": map[string]any{"conversation_id": "mc-1"}}})
	require.NoError(t, err)
	require.JSONEq(t, `{"conversation":"mc-1"}`, body)
	at, err := doc.Steps[1].Until.Time(context.Background(), workflows.Vars{Now: time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC), at, "9:00 in New York the next morning")
}

func TestParseNamesEveryErrorWithPathAndLine(t *testing.T) {
	t.Parallel()
	_, err := workflows.Parse([]byte(`name: Broken
trigger:
  type: schedule
  cron: "61 * * * *"
  timezone: Mars/Olympus
steps:
  - id: check
    type: if
    condition: event.data.amount_usd + 1
    else: nowhere
  - id: check
    type: http_request
    url: "https://x.example/{{ nope( }}"
    label: x
  - id: pause
    type: wait
  - type: teleport
`))
	var errs workflows.Errors
	require.True(t, errors.As(err, &errs), "%v", err)
	got := map[string]int{}
	for _, e := range errs {
		got[e.Path] = e.Line
	}
	require.Equal(t, map[string]int{
		"trigger.cron":       4,
		"trigger.timezone":   5,
		"steps[0].condition": 9,
		"steps[0].else":      10,
		"steps[1].id":        11,
		"steps[1].url":       13,
		"steps[1].label":     14,
		"steps[2]":           15,
		"steps[3].id":        17,
		"steps[3].type":      17,
	}, got, "%v", err)
}

func TestExamplesAreValid(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../testdata/workflows/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		_, err = workflows.Parse(raw)
		require.NoError(t, err, f)
	}
}

// The editors' JSON Schema accepts the examples and holds the same lists as the Go code.
func TestJSONSchemaAcceptsTheExamples(t *testing.T) {
	t.Parallel()
	c := jsonschema.NewCompiler()
	var doc any
	require.NoError(t, json.Unmarshal(workflows.JSONSchema(), &doc))
	require.NoError(t, c.AddResource("workflow.json", doc))
	sch, err := c.Compile("workflow.json")
	require.NoError(t, err)
	files, err := filepath.Glob("../testdata/workflows/*.yaml")
	require.NoError(t, err)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var v any
		require.NoError(t, yaml.Unmarshal(raw, &v))
		require.NoError(t, sch.Validate(v), f)
	}
	var bad any
	require.NoError(t, yaml.Unmarshal([]byte("name: x\ntrigger: {type: manual}\nsteps: [{id: a, type: wait, url: x}]\n"), &bad))
	require.Error(t, sch.Validate(bad))
	defs := doc.(map[string]any)["$defs"].(map[string]any)
	stepTypes := defs["step"].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["enum"].([]any)
	require.Len(t, stepTypes, len(workflows.StepTypes()))
	for i, st := range workflows.StepTypes() {
		require.Equal(t, string(st), stepTypes[i])
	}
	events := defs["trigger"].(map[string]any)["properties"].(map[string]any)["event"].(map[string]any)["enum"].([]any)
	require.Len(t, events, len(workflows.TriggerEvents()))
}
