package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/llm/llmtest"
)

// referenceSchemas validates bodies against the reference API's own published OpenAPI
// document (testdata/openai-reference: the schemas this test needs, unchanged), so that
// strictly typed clients generated from it read everything /v1 writes.
type referenceSchemas struct {
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

func loadReference(t *testing.T) *referenceSchemas {
	t.Helper()
	f, err := os.Open("../testdata/openai-reference/schemas.json")
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020) // OpenAPI 3.1 schemas are JSON Schema 2020-12
	require.NoError(t, c.AddResource("reference.json", doc))
	return &referenceSchemas{compiler: c, compiled: map[string]*jsonschema.Schema{}}
}

// check validates one JSON body against the named reference schema.
func (r *referenceSchemas) check(t *testing.T, schema string, body []byte) {
	t.Helper()
	s, ok := r.compiled[schema]
	if !ok {
		var err error
		s, err = r.compiler.Compile("reference.json#/components/schemas/" + schema)
		require.NoError(t, err, schema)
		r.compiled[schema] = s
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(body)))
	require.NoError(t, err, "%s is not JSON: %s", schema, body)
	require.NoError(t, s.Validate(v), "%s does not conform to the reference %s", body, schema)
}

// responseEvents names the reference schema of each Responses stream event.
var responseEvents = map[string]string{
	"response.created":            "ResponseCreatedEvent",
	"response.output_item.added":  "ResponseOutputItemAddedEvent",
	"response.content_part.added": "ResponseContentPartAddedEvent",
	"response.output_text.delta":  "ResponseTextDeltaEvent",
	"response.output_text.done":   "ResponseTextDoneEvent",
	"response.content_part.done":  "ResponseContentPartDoneEvent",
	"response.output_item.done":   "ResponseOutputItemDoneEvent",
	"response.completed":          "ResponseCompletedEvent",
	"error":                       "ResponseErrorEvent",
}

// checkResponseStream validates every frame of a Responses stream by its event type.
func (r *referenceSchemas) checkResponseStream(t *testing.T, body []byte) []string {
	t.Helper()
	var types []string
	for _, f := range sseFrames(t, string(body)) {
		schema, ok := responseEvents[f[0]]
		require.True(t, ok, "unexpected event %q", f[0])
		r.check(t, schema, []byte(f[1]))
		types = append(types, f[0])
	}
	return types
}

// checkChatStream validates every chunk of a chat stream; a failure mid-stream is an
// error envelope, and the stream ends with [DONE] otherwise.
func (r *referenceSchemas) checkChatStream(t *testing.T, body []byte) {
	t.Helper()
	frames := sseFrames(t, string(body))
	require.NotEmpty(t, frames)
	for _, f := range frames {
		switch {
		case f[1] == "[DONE]":
		case strings.HasPrefix(f[1], `{"error"`):
			r.check(t, "ErrorResponse", []byte(f[1]))
		default:
			r.check(t, "CreateChatCompletionStreamResponse", []byte(f[1]))
		}
	}
}

// TestV1ConformsToTheReferenceDocument validates every kind of /v1 body and stream frame
// against the reference API's schemas: models, responses (inline, stored, background,
// failed, streamed, cut short), chat completions and their chunks, and errors.
func TestV1ConformsToTheReferenceDocument(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ref := loadReference(t)
	auth := "Bearer " + b.key
	ok := func(resp *http.Response, body []byte) []byte {
		t.Helper()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		return body
	}

	ref.check(t, "ListModelsResponse", ok(b.get(t, "/v1/models")))
	ref.check(t, "Model", ok(b.get(t, "/v1/models/"+catalog.DefaultModel)))

	// An inline response echoes its instructions and carries the always-returned fields.
	body := ok(b.do(t, http.MethodPost, "/v1/responses", auth,
		`{"input":"hi","instructions":"Answer in three bullets.","temperature":0.2,"tools":[{"type":"function","name":"f"}]}`))
	ref.check(t, "Response", body)
	var r map[string]any
	require.NoError(t, json.Unmarshal(body, &r))
	require.Equal(t, "Answer in three bullets.", r["instructions"])
	require.Equal(t, []any{}, r["tools"], "client tools are ignored, so none are listed")
	require.Equal(t, "auto", r["tool_choice"])
	require.Equal(t, true, r["parallel_tool_calls"])
	require.InDelta(t, 1, r["temperature"], 0, "the value used, not the one sent (ignored)")
	require.InDelta(t, 1, r["top_p"], 0)
	require.Contains(t, r, "incomplete_details")
	require.Nil(t, r["incomplete_details"])
	part := r["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)
	require.Equal(t, []any{}, part["logprobs"])
	stored := ok(b.get(t, "/v1/responses/"+r["id"].(string)))
	ref.check(t, "Response", stored)
	require.JSONEq(t, string(body), string(stored))

	// Without instructions the field is null, not absent.
	body = ok(b.do(t, http.MethodPost, "/v1/responses", auth, `{"input":"hi","store":false}`))
	ref.check(t, "Response", body)
	require.NoError(t, json.Unmarshal(body, &r))
	require.Contains(t, r, "instructions")
	require.Nil(t, r["instructions"])

	// Streamed.
	types := ref.checkResponseStream(t, ok(b.do(t, http.MethodPost, "/v1/responses", auth, `{"input":"hi","stream":true,"instructions":"be brief"}`)))
	require.Equal(t, "response.completed", types[len(types)-1])

	// Cut short mid-stream: an error event.
	b.vendors[catalog.Alpha].Push(llmtest.Reply{Text: "a b c d e f", Chunks: 6, CutAfter: 2})
	types = ref.checkResponseStream(t, ok(b.do(t, http.MethodPost, "/v1/responses", auth, `{"input":"hi","stream":true}`)))
	require.Equal(t, "error", types[len(types)-1])

	// Background: the queued shell, then the finished response; and a failed one, whose
	// code must be of the reference's closed list.
	body = ok(b.do(t, http.MethodPost, "/v1/responses", auth, `{"input":"hi","background":true,"instructions":"later"}`))
	ref.check(t, "Response", body)
	require.NoError(t, json.Unmarshal(body, &r))
	done := b.waitFinished(t, r["id"].(string))
	require.Equal(t, "completed", done.Status)
	body = ok(b.get(t, "/v1/responses/"+done.ID))
	ref.check(t, "Response", body)
	require.NoError(t, json.Unmarshal(body, &r))
	require.Equal(t, "later", r["instructions"], "a background response echoes its instructions too")

	for status, code := range map[int]string{http.StatusServiceUnavailable: "server_error", http.StatusTooManyRequests: "rate_limit_exceeded"} {
		b.vendors[catalog.Alpha].Push(llmtest.Reply{Status: status})
		body = ok(b.do(t, http.MethodPost, "/v1/responses", auth, `{"input":"hi","background":true}`))
		require.NoError(t, json.Unmarshal(body, &r))
		failed := b.waitFinished(t, r["id"].(string))
		require.Equal(t, "failed", failed.Status)
		require.Equal(t, code, str(failed.Error.Code), "vendor status %d", status)
		ref.check(t, "Response", ok(b.get(t, "/v1/responses/"+failed.ID)))
	}

	// Chat completions, ephemeral and stateful, plain and streamed (with usage), and a
	// stream cut short.
	ref.check(t, "CreateChatCompletionResponse", ok(b.do(t, http.MethodPost, "/v1/chat/completions", auth,
		`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`)))
	body = ok(b.do(t, http.MethodPost, "/v1/chat/completions", auth, `{"messages":[{"role":"user","content":"hi"}]}`))
	ref.check(t, "CreateChatCompletionResponse", body)
	ref.checkChatStream(t, ok(b.do(t, http.MethodPost, "/v1/chat/completions", auth,
		`{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)))
	b.vendors[catalog.Alpha].Push(llmtest.Reply{Text: "a b c d e f", Chunks: 6, CutAfter: 2})
	ref.checkChatStream(t, ok(b.do(t, http.MethodPost, "/v1/chat/completions", auth,
		`{"stream":true,"messages":[{"role":"user","content":"hi"}]}`)))

	// Errors.
	for _, c := range []struct{ method, path, auth, body string }{
		{http.MethodGet, "/v1/models", "", ""},
		{http.MethodGet, "/v1/models/nope", auth, ""},
		{http.MethodPost, "/v1/responses", auth, `{"input":"hi","model":"nope"}`},
		{http.MethodGet, "/v1/responses/resp_nope", auth, ""},
		{http.MethodPost, "/v1/chat/completions", auth, `{"messages":[{"role":"nope","content":"hi"}]}`},
	} {
		resp, body := b.do(t, c.method, c.path, c.auth, c.body)
		require.GreaterOrEqual(t, resp.StatusCode, 400)
		ref.check(t, "ErrorResponse", body)
	}
}
