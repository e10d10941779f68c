package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/llm/llmtest"
	"switchboard/msgapps/msgappstest"
)

// workflowView is a workflow as /api answers it.
type workflowView struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	Trigger struct {
		Type  string  `json:"type"`
		Event *string `json:"event"`
	} `json:"trigger"`
	Document string `json:"document"`
}

// runView is a run as /api answers it.
type runView struct {
	ID         string  `json:"id"`
	WorkflowID string  `json:"workflow_id"`
	Status     string  `json:"status"`
	Error      *string `json:"error"`
	Steps      []struct {
		ID       string          `json:"id"`
		Status   string          `json:"status"`
		Attempts int             `json:"attempts"`
		Output   json.RawMessage `json:"output"`
	} `json:"steps"`
}

func (b *testBundle) newWorkflow(t *testing.T, doc string) workflowView {
	t.Helper()
	body, err := json.Marshal(map[string]any{"document": doc})
	require.NoError(t, err)
	return decode[workflowView](t, b.send(t, http.MethodPost, "/api/workflows", string(body), http.StatusCreated))
}

// finished waits for the run to end and returns it.
func (b *testBundle) finished(t *testing.T, runID string) runView {
	t.Helper()
	var r runView
	require.Eventually(t, func() bool {
		r = decode[runView](t, b.send(t, http.MethodGet, "/api/runs/"+runID, "", http.StatusOK))
		return r.Status == "succeeded" || r.Status == "failed" || r.Status == "cancelled"
	}, 20*time.Second, 20*time.Millisecond)
	return r
}

func TestAPIWorkflowsCRUDAndManualRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := newReceiver(t)
	doc := `name: Ping
description: Tell the receiver
trigger: {type: manual}
steps:
  - id: ping
    type: http_request
    url: ` + hook.URL + `/ping
    body: '{{ to_json({"who": input.who}) }}'
`
	wf := b.newWorkflow(t, doc)
	require.True(t, strings.HasPrefix(wf.ID, "wf_"))
	require.Equal(t, "manual", wf.Trigger.Type)
	require.Equal(t, doc, wf.Document)
	list := decode[struct{ Data []workflowView }](t, b.send(t, http.MethodGet, "/api/workflows", "", http.StatusOK))
	require.Len(t, list.Data, 1)

	// A run by hand, worked by the server's job queue.
	run := decode[runView](t, b.send(t, http.MethodPost, "/api/workflows/"+wf.ID+"/runs", `{"input":{"who":"Ann"}}`, http.StatusCreated))
	require.Equal(t, "queued", run.Status)
	got := b.finished(t, run.ID)
	require.Equal(t, "succeeded", got.Status, got.Error)
	require.Len(t, got.Steps, 1)
	require.Equal(t, 1, got.Steps[0].Attempts)
	require.JSONEq(t, `{"who":"Ann"}`, string(hook.got()[0].body))
	runs := decode[struct{ Data []runView }](t, b.send(t, http.MethodGet, "/api/workflows/"+wf.ID+"/runs", "", http.StatusOK))
	require.Len(t, runs.Data, 1)
	require.Equal(t, wf.ID, runs.Data[0].WorkflowID)

	// Off and on again, keeping the document.
	off := decode[workflowView](t, b.send(t, http.MethodPatch, "/api/workflows/"+wf.ID, `{"enabled":false}`, http.StatusOK))
	require.False(t, off.Enabled)
	require.Equal(t, doc, off.Document)

	// Another workspace sees none of it.
	other, err := b.store.CreateWorkspace(context.Background(), "other", 1_000_000_000)
	require.NoError(t, err)
	otherKey := "Bearer " + b.newKey(t, other, "admin")
	for _, path := range []string{"/api/workflows/" + wf.ID, "/api/runs/" + run.ID, "/api/workflows/" + wf.ID + "/runs"} {
		resp, raw := b.do(t, http.MethodGet, path, otherKey, "")
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "%s: %s", path, raw)
	}
	resp, _ := b.do(t, http.MethodPost, "/api/runs/"+run.ID+"/cancel", otherKey, "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Delete.
	b.send(t, http.MethodDelete, "/api/workflows/"+wf.ID, "", http.StatusOK)
	b.send(t, http.MethodGet, "/api/workflows/"+wf.ID, "", http.StatusNotFound)
	b.send(t, http.MethodGet, "/api/runs/"+run.ID, "", http.StatusNotFound)
}

func TestAPIWorkflowValidationNamesPathAndLineAndWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body, err := json.Marshal(map[string]any{"document": `name: Bad
trigger:
  type: event
  event: run.completed
steps:
  - id: a
    type: if
    condition: 'input.x +'
`})
	require.NoError(t, err)
	resp, raw := b.do(t, http.MethodPost, "/api/workflows", "Bearer "+b.key, string(body))
	e := errorOf(t, resp, raw, http.StatusBadRequest)
	require.Equal(t, "invalid_workflow", e.codeOrEmpty())
	require.Contains(t, e.Message, "trigger.event (line 4): must be one of")
	require.Contains(t, e.Message, "steps[0].condition (line 8): invalid expression")
	require.Zero(t, b.count(t, "workflows"))
	// A model the server does not have is refused when the workflow is saved, at its line.
	resp, raw = b.do(t, http.MethodPost, "/api/workflows", "Bearer "+b.key,
		`{"document":"name: Typo\ntrigger: {type: manual}\nsteps:\n  - id: s\n    type: agent_prompt\n    prompt: Sum up\n    model: alpha-small\n"}`)
	e = errorOf(t, resp, raw, http.StatusBadRequest)
	require.Contains(t, e.Message, `steps[0].model (line 7): "alpha-small" is not a model of this server`)
	require.Zero(t, b.count(t, "workflows"))

	b.newWorkflow(t, "name: Twice\ntrigger: {type: manual}\nsteps: [{id: w, type: wait, duration: 1m}]\n")
	resp, raw = b.do(t, http.MethodPost, "/api/workflows", "Bearer "+b.key, `{"document":"name: Twice\ntrigger: {type: manual}\nsteps: [{id: w, type: wait, duration: 1m}]\n"}`)
	require.Equal(t, "workflow_name_taken", errorOf(t, resp, raw, http.StatusConflict).codeOrEmpty())
	resp, raw = b.do(t, http.MethodPost, "/api/workflows/wf_nope/runs", "Bearer "+b.key, `{}`)
	require.Equal(t, "workflow_not_found", errorOf(t, resp, raw, http.StatusNotFound).codeOrEmpty())
}

func TestAPICancelAWaitingRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.newWorkflow(t, "name: Slow\ntrigger: {type: manual}\nsteps: [{id: w, type: wait, duration: 1h}]\n")
	run := decode[runView](t, b.send(t, http.MethodPost, "/api/workflows/"+wf.ID+"/runs", "", http.StatusCreated))
	require.Eventually(t, func() bool {
		return decode[runView](t, b.send(t, http.MethodGet, "/api/runs/"+run.ID, "", http.StatusOK)).Status == "waiting"
	}, 20*time.Second, 20*time.Millisecond)
	got := decode[runView](t, b.send(t, http.MethodPost, "/api/runs/"+run.ID+"/cancel", "", http.StatusOK))
	require.Equal(t, "cancelled", got.Status)
	got = decode[runView](t, b.send(t, http.MethodPost, "/api/runs/"+run.ID+"/cancel", "", http.StatusOK))
	require.Equal(t, "cancelled", got.Status, "cancelling again answers the run as it is")
}

// run.completed reaches the feed and a webhook, once.
func TestRunCompletedOnceOnTheFeedAndAtAWebhook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := newReceiver(t)
	b.send(t, http.MethodPost, "/v1/webhooks", `{"url":"`+hook.URL+`","event_types":["run.completed"]}`, http.StatusCreated)
	wf := b.newWorkflow(t, "name: Quick\ntrigger: {type: manual}\nsteps: [{id: w, type: wait, duration: 1s}]\n")
	run := decode[runView](t, b.send(t, http.MethodPost, "/api/workflows/"+wf.ID+"/runs", "", http.StatusCreated))
	require.Equal(t, "succeeded", b.finished(t, run.ID).Status)
	require.Eventually(t, func() bool { return len(hook.got()) >= 1 }, 20*time.Second, 20*time.Millisecond)
	var env struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(hook.got()[0].body, &env))
	require.Equal(t, "run.completed", env.Type)
	require.Equal(t, map[string]any{"run_id": run.ID, "workflow_id": wf.ID, "status": "succeeded"}, env.Data)
	b.send(t, http.MethodPost, "/api/runs/"+run.ID+"/cancel", "", http.StatusOK) // a finished run: nothing more
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM events WHERE workspace_id = $1 AND type = 'run.completed'`, b.workspace.ID))
	require.Len(t, hook.got(), 1)
}

// A workflow on conversation.created runs when a conversation opens, through the server's
// periodic trigger job.
func TestAnEventTriggerRunsOnTheServer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := newReceiver(t)
	wf := b.newWorkflow(t, `name: On open
trigger: {type: event, event: conversation.created, condition: 'event.data.channel == "api"'}
steps:
  - {id: tell, type: http_request, url: "`+hook.URL+`", body: "{{ event.data.conversation_id }}"}
`)
	b.send(t, http.MethodPost, "/v1/responses", `{"model":"beta-5.4","input":"hello","store":true}`, http.StatusOK)
	require.Eventually(t, func() bool { return len(hook.got()) == 1 }, 20*time.Second, 50*time.Millisecond)
	require.True(t, strings.HasPrefix(string(hook.got()[0].body), "mc-"))
	runs := decode[struct{ Data []runView }](t, b.send(t, http.MethodGet, "/api/workflows/"+wf.ID+"/runs", "", http.StatusOK))
	require.Len(t, runs.Data, 1)
}

// send_message on sms queues the text in the run's SMS conversation and the carrier fake
// receives it.
func TestSendMessageTextsTheConversationThroughTheCarrier(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t)
	b := w.b
	resp, _ := w.text(t, ann, "Hello", "SM00000000000000000000000000000001")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	w.waitReplies(t, ann, 1)
	var conv string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(),
		`SELECT short_id FROM conversations WHERE workspace_id = $1 AND channel = 'sms'`, b.workspace.ID).Scan(&conv))
	wf := b.newWorkflow(t, `name: Follow up
trigger: {type: manual}
steps:
  - {id: nudge, type: send_message, channel: sms, body: "Still there? ({{ conversation.id }})"}
`)
	run := decode[runView](t, b.send(t, http.MethodPost, "/api/workflows/"+wf.ID+"/runs", `{"input":{"conversation_id":"`+conv+`"}}`, http.StatusCreated))
	require.Equal(t, "succeeded", b.finished(t, run.ID).Status)
	replies := w.waitReplies(t, ann, 2)
	require.Equal(t, "Still there? ("+conv+")", replies[1].Body)
}

func (b *testBundle) workflowProbes() []probe {
	api := func(method string, path func(t *testing.T) string, body string) func(*testing.T, string) outcome {
		return func(t *testing.T, key string) outcome { return b.viaHTTP(t, method, path(t), key, body) }
	}
	fixed := func(p string) func(*testing.T) string { return func(*testing.T) string { return p } }
	flow := func(suffix string) func(t *testing.T) string {
		return func(t *testing.T) string {
			name := "Probe " + time.Now().Format("150405.000000000")
			return "/api/workflows/" + b.newWorkflow(t, "name: "+name+"\ntrigger: {type: manual}\nsteps: [{id: w, type: wait, duration: 1h}]\n").ID + suffix
		}
	}
	run := func(suffix string) func(t *testing.T) string {
		return func(t *testing.T) string {
			r := decode[runView](t, b.send(t, http.MethodPost, flow("/runs")(t), "", http.StatusCreated))
			return "/api/runs/" + r.ID + suffix
		}
	}
	return []probe{
		{"listWorkflows", "viewer", api(http.MethodGet, fixed("/api/workflows"), "")},
		{"createWorkflow", "member", func(t *testing.T, key string) outcome {
			body, _ := json.Marshal(map[string]any{"document": "name: By " + key[len(key)-8:] + "\ntrigger: {type: manual}\nsteps: [{id: w, type: wait, duration: 1m}]\n"})
			return b.viaHTTP(t, http.MethodPost, "/api/workflows", key, string(body))
		}},
		{"getWorkflow", "viewer", api(http.MethodGet, flow(""), "")},
		{"updateWorkflow", "member", api(http.MethodPatch, flow(""), `{"enabled":false}`)},
		{"deleteWorkflow", "member", api(http.MethodDelete, flow(""), "")},
		{"listWorkflowRuns", "viewer", api(http.MethodGet, flow("/runs"), "")},
		{"startWorkflowRun", "member", api(http.MethodPost, flow("/runs"), `{"input":{}}`)},
		{"getWorkflowRun", "viewer", api(http.MethodGet, run(""), "")},
		{"cancelWorkflowRun", "member", api(http.MethodPost, run("/cancel"), "")},
	}
}

func TestWorkflowSchemaIsServed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, raw := b.do(t, http.MethodGet, "/schemas/workflow.json", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(raw, &schema))
	require.Equal(t, "Switchboard workflow", schema["title"])
}

// The dashboard's Workflows page: a member adds a workflow (a bad document lists each error
// with its path and line, and saves nothing), turns it off, runs it by hand and reads the
// run's timeline; a viewer reads the pages and is refused when posting.
func TestWorkflowsDashboardPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := newReceiver(t)
	member := b.signedIn(t, "member")
	viewer := b.signedIn(t, "viewer")
	formType := []string{"Content-Type", "application/x-www-form-urlencoded"}
	post := func(br *browser, path string, v url.Values) (*http.Response, string) {
		resp, raw := br.do(t, http.MethodPost, path, v.Encode(), formType...)
		return resp, string(raw)
	}
	resp, page := post(member, "/dashboard/workflows", url.Values{"document": {"name: Bad\ntrigger: {type: manual}\nsteps:\n  - {id: a, type: teleport}\n"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, page, `<code>steps[0].type</code> (line 4): must be one of`)
	require.Zero(t, b.count(t, "workflows"))

	doc := "name: Pinger\ntrigger: {type: manual}\nsteps:\n  - {id: ping, type: http_request, url: \"" + hook.URL + "\"}\n"
	resp, _ = post(member, "/dashboard/workflows", url.Values{"document": {doc}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	list := decode[struct{ Data []workflowView }](t, b.send(t, http.MethodGet, "/api/workflows", "", http.StatusOK))
	require.Len(t, list.Data, 1)
	id := list.Data[0].ID
	require.Equal(t, "/dashboard/workflows/"+id, resp.Header.Get("Location"))
	resp, _ = post(member, "/dashboard/workflows/"+id+"/enabled", url.Values{"enabled": {"false"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, raw := member.do(t, http.MethodGet, "/dashboard/workflows", "")
	require.Contains(t, string(raw), "is off")
	require.False(t, decode[workflowView](t, b.send(t, http.MethodGet, "/api/workflows/"+id, "", http.StatusOK)).Enabled)

	resp, _ = post(member, "/dashboard/workflows/"+id+"/run", url.Values{"input": {`{"who":"Ann"}`}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, raw = member.do(t, http.MethodGet, resp.Header.Get("Location"), "")
	require.Contains(t, string(raw), `<h2>Timeline</h2>`)
	runs := decode[struct{ Data []runView }](t, b.send(t, http.MethodGet, "/api/workflows/"+id+"/runs", "", http.StatusOK))
	require.Len(t, runs.Data, 1)
	b.finished(t, runs.Data[0].ID)
	resp, raw = viewer.do(t, http.MethodGet, "/dashboard/runs/"+runs.Data[0].ID, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(raw), `id="step-ping"`)
	require.Contains(t, string(raw), `<span class="badge status-succeeded" id="run-status">succeeded</span>`)
	resp, raw = viewer.do(t, http.MethodGet, "/dashboard/workflows", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(raw), "Pinger")
	require.NotContains(t, string(raw), `id="new-form"`, "a viewer gets no form")
	resp, _ = post(viewer, "/dashboard/workflows/"+id+"/enabled", url.Values{"enabled": {"true"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// TestSendMessageWritesInAWhatsAppConversation: send_message on msgapp_1 answers in the run's
// WhatsApp conversation through the app's send API, as a person's reply would.
func TestSendMessageWritesInAWhatsAppConversation(t *testing.T) {
	t.Parallel()
	w := newWhatsAppWorld(t)
	b := w.b
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppMessage(waPhoneNumberID, waAnn, "Ann Lee", "wamid.WF1", "text", "Hello"), waSecret))
	w.waitSends(t, "/messages", 1)
	var conv string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(),
		`SELECT short_id FROM conversations WHERE workspace_id = $1 AND channel = 'msgapp_1'`, b.workspace.ID).Scan(&conv))
	wf := b.newWorkflow(t, `name: Follow up on WhatsApp
trigger: {type: manual}
steps:
  - {id: nudge, type: send_message, channel: msgapp_1, body: "Still there? ({{ conversation.id }})"}
`)
	run := decode[runView](t, b.send(t, http.MethodPost, "/api/workflows/"+wf.ID+"/runs", `{"input":{"conversation_id":"`+conv+`"}}`, http.StatusCreated))
	require.Equal(t, "succeeded", b.finished(t, run.ID).Status)
	sent := w.waitSends(t, "/messages", 2)
	require.JSONEq(t, `{"messaging_product":"whatsapp","recipient_type":"individual","to":"`+waAnn+`","type":"text",
		"text":{"preview_url":false,"body":"Still there? (`+conv+`)"}}`, string(sent[1].Body))

	// On a channel the run's conversation is not on, the step fails and names it.
	wf = b.newWorkflow(t, `name: Wrong channel
trigger: {type: manual}
steps:
  - {id: nudge, type: send_message, channel: msgapp_4, body: "Hi"}
`)
	run = decode[runView](t, b.send(t, http.MethodPost, "/api/workflows/"+wf.ID+"/runs", `{"input":{"conversation_id":"`+conv+`"}}`, http.StatusCreated))
	got := b.finished(t, run.ID)
	require.Equal(t, "failed", got.Status)
}

// TestTheCRMExampleRunsWhenAPersonClosesAConversation: the shipped example
// testdata/workflows/crm-summary-on-close.yaml, with only the CRM's address changed, posts
// one summary of a conversation when a person closes it, and none while it is open.
func TestTheCRMExampleRunsWhenAPersonClosesAConversation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	crm := newReceiver(t)
	raw, err := os.ReadFile("../testdata/workflows/crm-summary-on-close.yaml")
	require.NoError(t, err)
	const address = "https://crm.example.com/hooks/switchboard"
	require.Contains(t, string(raw), address)
	wf := b.newWorkflow(t, strings.Replace(string(raw), address, crm.URL, 1))

	v := &visitor{b: b, dep: b.deployOn(t, b.createAgent(t, handoffAgentYAML), `{}`)}
	v.say(t, "My order 1234 arrived broken")
	page := decode[inboxPage](t, b.send(t, http.MethodGet, "/api/conversations", "", http.StatusOK))
	require.Len(t, page.Data, 1)
	conv := page.Data[0].ID
	v.say(t, "Can you send another?") // the turns' turn.completed start no run: one run, below
	b.vendors[catalog.Alpha].Push(llmtest.Reply{Text: "The order arrived broken; send a replacement."})
	b.send(t, http.MethodPost, "/api/conversations/"+conv+"/close", "", http.StatusOK)

	require.Eventually(t, func() bool { return len(crm.got()) == 1 }, 20*time.Second, 50*time.Millisecond)
	var posted map[string]string
	require.NoError(t, json.Unmarshal(crm.got()[0].body, &posted))
	require.Equal(t, map[string]string{"conversation_id": conv, "summary": "The order arrived broken; send a replacement."}, posted)
	runs := decode[struct{ Data []runView }](t, b.send(t, http.MethodGet, "/api/workflows/"+wf.ID+"/runs", "", http.StatusOK))
	require.Len(t, runs.Data, 1)
	require.Equal(t, "succeeded", b.finished(t, runs.Data[0].ID).Status)
	prompt := b.vendors[catalog.Alpha].Requests()[0].Messages
	require.Contains(t, fmt.Sprint(prompt), "My order 1234 arrived broken", "the model read the transcript")
	labels := decode[inboxView](t, b.send(t, http.MethodGet, "/api/conversations/"+conv, "", http.StatusOK)).Labels
	require.Contains(t, labels, "crm-synced")
}
