package blueprint

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"switchboard/catalog"
)

const testdata = "../testdata/blueprints"

// example is one file under testdata/blueprints. An invalid file starts with comment lines
//
//	# expect: <yaml path> (line N)     one per error Parse must report (the path is empty
//	                                   for an error about the document as a whole)
//	# schema: accepts (<why>)          the JSON Schema cannot see this problem
type example struct {
	name          string
	data          []byte
	expect        []string // "path (line N)"
	schemaAccepts bool
}

var (
	expectComment = regexp.MustCompile(`(?m)^#\s*expect:\s*(\S*?)\s*\(line (\d+)\)\s*$`)
	schemaComment = regexp.MustCompile(`(?m)^#\s*schema:\s*accepts\b`)
)

func examples(t testing.TB, kind string) []example {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testdata, kind, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no %s examples", kind)
	var out []example
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		ex := example{name: filepath.Base(file), data: data, schemaAccepts: schemaComment.Match(data)}
		for _, m := range expectComment.FindAllSubmatch(data, -1) {
			ex.expect = append(ex.expect, fmt.Sprintf("%s (line %s)", m[1], m[2]))
		}
		out = append(out, ex)
	}
	return out
}

func located(errs Errors) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = fmt.Sprintf("%s (line %d)", e.Path, e.Line)
	}
	return out
}

func TestValidExamples(t *testing.T) {
	t.Parallel()
	cat := catalog.Default()
	for _, ex := range examples(t, "valid") {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			require.NotContains(t, string(ex.data), "# expect:", "a valid example expects no errors")
			bp, err := Parse(ex.data, cat)
			require.NoError(t, err)
			require.NotNil(t, bp.Agent.Persona)
			require.NotNil(t, bp.Agent.LLM)
			t.Log(Warnings(bp))

			// What Parse returns is itself a valid blueprint, unchanged by another round.
			out, err := yaml.Marshal(bp)
			require.NoError(t, err)
			again, err := Parse(out, cat)
			require.NoError(t, err, "%s", out)
			requireSameBlueprint(t, bp, again)
		})
	}
}

func TestInvalidExamples(t *testing.T) {
	t.Parallel()
	cat := catalog.Default()
	for _, ex := range examples(t, "invalid") {
		t.Run(ex.name, func(t *testing.T) {
			t.Parallel()
			require.NotEmpty(t, ex.expect, "an invalid example starts with # expect: lines")
			bp, err := Parse(ex.data, cat)
			require.Error(t, err)
			require.Nil(t, bp)
			var errs Errors
			require.True(t, errors.As(err, &errs), "%T", err)
			require.Equal(t, ex.expect, located(errs), "%v", err)
			for _, e := range errs {
				require.NotEmpty(t, e.Message)
			}
			t.Log(err)
		})
	}
}

// The messages are for people (and for the assistant that writes blueprints), so a few are
// held to their wording.
func TestMessages(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"tone-not-in-enum.yaml":                  "agent.persona.tone (line 7): must be one of friendly, professional, casual, formal",
		"name-too-long.yaml":                     "agent.name (line 3): must be at most 100 characters long (got 101)",
		"name-missing.yaml":                      "agent.name (line 2): is required", // missing: the line of the mapping that lacks it
		"unknown-key.yaml":                       "agent.persona.avatar (line 8): unknown field; expected one of display_name, tone, greeting",
		"crawl-without-url.yaml":                 "agent.knowledge_base.sources[1].url (line 19): is required when type is website_crawl",
		"model-of-other-family.yaml":             "agent.llm.model (line 11): gamma-v4-pro is a gamma model, not alpha; alpha models: alpha-sonnet-4-6, alpha-haiku-4-5, alpha-opus-4-7",
		"start-equals-end.yaml":                  "agent.business_rules.business_hours.schedule.wednesday (line 21): start and end are both 09:00: give different times (an end before the start is an overnight shift)",
		"too-many-labels.yaml":                   "agent.labels (line 15): must have at most 50 items (got 51)",
		"temperature-out-of-range.yaml":          "agent.llm.temperature (line 12): must be at most 2 (got 2.5)",
		"temperature-missing.yaml":               "agent.llm.temperature (line 9): is required",
		"bad-timezone.yaml":                      "agent.business_rules.business_hours.timezone (line 18): must be an IANA time zone such as Europe/Berlin or America/New_York",
		"max-tokens-not-integer.yaml":            "agent.llm.max_tokens (line 13): must be a whole number, got 512.5",
		"persona-not-a-mapping.yaml":             "agent.persona (line 5): must be a mapping, got a string",
		"duplicate-key.yaml":                     "agent.persona.tone (line 9): duplicate key; first given on line 8",
		"depth-on-non-crawl-source.yaml":         "agent.knowledge_base.sources[0].depth (line 19): is only allowed when type is website_crawl",
		"escalation-enabled-without-action.yaml": "agent.business_rules.escalation.action (line 16): is required when enabled is true",
	}
	cat := catalog.Default()
	for file, want := range cases {
		data, err := os.ReadFile(filepath.Join(testdata, "invalid", file))
		require.NoError(t, err)
		_, err = Parse(data, cat)
		require.Error(t, err, file)
		require.Equal(t, want, err.Error(), file)
	}
}

func TestErrorsFormat(t *testing.T) {
	t.Parallel()
	errs := Errors{
		{Path: "agent.name", Line: 3, Message: "is required"},
		{Line: 4, Message: "invalid YAML: did not find expected key"},
		{Path: "agent", Message: "is required"},
		{Message: "blueprint is too large"},
	}
	require.Equal(t, "agent.name (line 3): is required\nline 4: invalid YAML: did not find expected key\nagent: is required\nblueprint is too large", errs.Error())
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	bp, err := Parse([]byte(minimal+`
  knowledge_base:
    sources:
      - type: website_crawl
        url: https://example.com
      - type: website_crawl
        url: https://example.com/deep
        depth: 4
      - type: markdown_file
        path: faq.md
  tools:
    - type: search_knowledge_base
    - type: apply_label
      enabled: false
`), nil)
	require.NoError(t, err)
	src := bp.Agent.KnowledgeBase.Sources
	require.Equal(t, DefaultCrawlDepth, *src[0].Depth)
	require.Equal(t, 4, *src[1].Depth)
	require.Nil(t, src[2].Depth)
	require.True(t, bp.Agent.Tools[0].Enabled)
	require.False(t, bp.Agent.Tools[1].Enabled)
}

const minimal = `agent:
  name: Helper
  language: en
  persona:
    display_name: Helper
    tone: friendly
    greeting: Hi!
  llm:
    provider: beta
    model: beta-5.4
    temperature: 0
    max_tokens: 1
    system_prompt: Be helpful, always.`

func TestBoundaries(t *testing.T) {
	t.Parallel()
	bp, err := Parse([]byte(minimal), nil)
	require.NoError(t, err)
	require.Equal(t, 0.0, *bp.Agent.LLM.Temperature, "temperature 0 is a value, not a missing one")
	require.Equal(t, 1, *bp.Agent.LLM.MaxTokens)

	for _, edit := range []struct{ from, to string }{
		{"temperature: 0", "temperature: 2.0"},
		{"max_tokens: 1", "max_tokens: 8192"},
		{"max_tokens: 1", "max_tokens: 100.0"},                // a whole number, as in JSON Schema
		{"name: Helper", "name: " + strings.Repeat("é", 100)}, // characters, not bytes
		{"language: en", "language: zh-Hant-TW"},
		{"language: en", "language: en-US-u-ca-gregory"},
		{"display_name: Helper", `display_name: "2024"`},
		{"display_name: Helper", `display_name: 2024-06-01`}, // an unquoted date is still text
	} {
		_, err := Parse([]byte(strings.Replace(minimal, edit.from, edit.to, 1)), nil)
		require.NoError(t, err, edit.to)
	}
}

func TestHostileInput(t *testing.T) {
	t.Parallel()
	bomb := &strings.Builder{}
	bomb.WriteString("lol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(bomb, "lol%d: &l%d [*l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d, *l%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	bomb.WriteString(strings.Replace(minimal, "agent:", "agent:\n  channels: [{type: webchat, config: {x: *l9}}]", 1))

	// Tens of thousands of errors once took seconds (each error was checked against all
	// earlier ones); the list is now capped and the check is a map lookup.
	manyErrors := &strings.Builder{}
	manyErrors.WriteString("agent:\n  labels:\n")
	for manyErrors.Len() < MaxSize-10 {
		manyErrors.WriteString("  - 1\n")
	}

	cases := map[string]struct {
		input string
		want  string
	}{
		"too large":       {strings.Repeat("#", MaxSize+1), "the limit is 262144"},
		"billion laughs":  {bomb.String(), "more than 100000 YAML nodes"},
		"alias cycle":     {strings.Replace(minimal, "agent:", "agent:\n  channels: [{type: webchat, config: &c {self: *c}}]", 1), "nested more than 64 levels deep"},
		"deep nesting":    {strings.Replace(minimal, "agent:", "agent:\n  tools: [{type: http_request, config: {a: "+strings.Repeat("[", 100)+strings.Repeat("]", 100)+"}}]", 1), "nested more than 64 levels deep"},
		"many errors":     {manyErrors.String(), "agent.labels[99] (line 102): must be a string, got an integer\nand "},
		"two documents":   {minimal + "\n---\n" + minimal, "line 15: a blueprint is a single YAML document"},
		"not UTF-8":       {"agent: {name: \xff\xfe}", "invalid YAML"},
		"complex key":     {strings.Replace(minimal, "  name: Helper", "  ? [name]\n  : Helper", 1), "agent (line 2): keys must be strings"},
		"flow scalar tab": {"agent: \"\\t\"", "agent (line 1): must be a mapping, got a string"},
		"6000 levels":     {strings.Replace(minimal, "agent:", "agent:\n  tools: [{type: http_request, config: {a: "+strings.Repeat("[", 6000)+strings.Repeat("]", 6000)+"}}]", 1), "nested more than 64 levels deep"},
		// PostgreSQL refuses U+0000 in text: a double-quoted "\0" must not reach it.
		"NUL in a value": {strings.Replace(minimal, "  name: Helper", `  name: "Hel\0per"`, 1), "agent.name (line 2): contains a NUL character"},
		"NUL in config":  {strings.Replace(minimal, "agent:", "agent:\n  channels: [{type: webchat, config: {x: [\"\\0\"]}}]", 1), "agent.channels[0].config.x[0] (line 2): contains a NUL character"},
		"NUL in a key":   {strings.Replace(minimal, "agent:", "agent:\n  channels: [{type: webchat, config: {\"\\0\": 1}}]", 1), "contains a NUL character"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// No time bound here (a timing broke on a loaded machine): unguarded, the first
			// cases would not finish at all, which go test's own -timeout catches; the caps
			// they hit are asserted by their error messages.
			_, err := Parse([]byte(c.input), catalog.Default())
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	quiet, err := Parse([]byte(minimal), nil)
	require.NoError(t, err)
	require.Empty(t, Warnings(quiet))

	bp, err := Parse([]byte(strings.NewReplacer(
		"temperature: 0", "temperature: 1.8",
		"greeting: Hi!", "greeting: "+strings.Repeat("Hello there. ", 25),
	).Replace(minimal)+`
  knowledge_base:
    sources:
      - type: website_crawl
        url: HTTP://example.com
  channels:
    - type: sms
    - type: webchat
    - type: sms
  business_rules:
    escalation:
      enabled: true
      trigger: user_request
      action: email_notification
`), nil)
	require.NoError(t, err)
	require.Equal(t, []string{
		"agent.persona.greeting: 324 characters; greetings over 300 characters are long to read, and longer to hear on a voice channel",
		"agent.llm.temperature: 1.8 is above 1.5; replies may become erratic",
		"agent.knowledge_base.sources[0].url: HTTP://example.com is not https://",
		"agent.channels[2]: channel sms is listed again (first at agent.channels[0])",
		"agent.business_rules.escalation.notification_email: not set, so the email_notification action has no address to write to",
	}, Warnings(bp))

	off, err := Parse([]byte(minimal+`
  business_rules:
    escalation: {enabled: false, trigger: sentiment, action: collect_contact}
`), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"agent.business_rules.escalation: trigger and action are set but enabled is false, so nothing escalates"}, Warnings(off))
}

// Parse takes its catalog as a parameter; a nil one means the default table.
func TestCatalogParameter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "models.yaml")
	require.NoError(t, os.WriteFile(path, []byte("beta-5.4:\n  upstream: vendor-model-x\n  input_per_mtok: 1\n  output_per_mtok: 2\n"), 0o600))
	cat, err := catalog.Load(path)
	require.NoError(t, err)
	_, err = Parse([]byte(minimal), cat)
	require.NoError(t, err)
	// Spec: "agent.llm.model | string". A name the catalog does not serve (here the upstream
	// name, not an id) is valid, with a warning naming the served models of the family.
	bp, err := Parse([]byte(strings.Replace(minimal, "model: beta-5.4", "model: vendor-model-x", 1)), cat)
	require.NoError(t, err)
	require.Equal(t, []string{`agent.llm.model: "vendor-model-x" is not a model this platform serves, so the agent's turns fail with model_not_found until it names one; served beta models: beta-5.4, beta-5.4-mini`},
		ModelWarnings(bp, cat))
	bp, err = Parse([]byte(minimal), cat)
	require.NoError(t, err)
	require.Empty(t, ModelWarnings(bp, cat), "a served model is no warning")
}

func TestLineNumbersOfAliases(t *testing.T) {
	t.Parallel()
	// A value reached through an alias is reported at the line where it is written (the
	// anchor), under the path where it is used.
	doc := minimal + `
  business_rules:
    business_hours:
      timezone: UTC
      schedule:
        monday: &weekday
          start: "08:00"
          end: "5pm"
        tuesday: *weekday
        wednesday: {start: "10:00", end: "10:00"}`
	_, err := Parse([]byte(doc), nil)
	var errs Errors
	require.ErrorAs(t, err, &errs)
	require.Equal(t, []string{
		"agent.business_rules.business_hours.schedule.monday.end (line 20)",
		"agent.business_rules.business_hours.schedule.tuesday.end (line 20)",
		"agent.business_rules.business_hours.schedule.wednesday (line 22)",
	}, located(errs))
}

func TestJSONMatchesSchema(t *testing.T) {
	t.Parallel()
	// What Parse returns, encoded as JSON (as the server will store and return it), is a
	// blueprint by the schema too.
	s := compileSchema(t)
	for _, ex := range examples(t, "valid") {
		bp, err := Parse(ex.data, nil)
		require.NoError(t, err)
		encoded, err := json.Marshal(bp)
		require.NoError(t, err)
		require.NoError(t, s.Validate(instance(t, encoded)), ex.name)
	}
}

// requireSameBlueprint compares by JSON, which does not tell an empty list from a missing one.
func requireSameBlueprint(t testing.TB, want, got *Blueprint) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(g))
}
