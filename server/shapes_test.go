package server_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/llm/llmtest"
)

var updateShapes = flag.Bool("update-shapes", false, "rewrite testdata/shapes from the bodies the server writes now")

// shape replaces every value of a JSON document by its kind and keeps every key, so two
// bodies of one shape carry the same fields, each present, absent or null alike. Key order
// and values may differ.
func shape(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			out[k] = shape(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = shape(x)
		}
		return out
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// requireShape compares the shapes of the named bodies with testdata/shapes/NAME.json,
// which was written from the bodies of the hand-written structs these handlers used before
// they returned the generated types (go test -run TestBodyShapes -update-shapes rewrites it).
func requireShape(t *testing.T, name string, bodies map[string]string) {
	t.Helper()
	got := map[string]any{}
	for k, body := range bodies {
		var v any
		require.NoError(t, json.Unmarshal([]byte(body), &v), "%s: %s", k, body)
		got[k] = shape(v)
	}
	raw, err := json.MarshalIndent(got, "", "  ")
	require.NoError(t, err)
	path := filepath.Join("testdata", "shapes", name+".json")
	if *updateShapes {
		require.NoError(t, os.WriteFile(path, append(raw, '\n'), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(raw), name)
}

// frameBodies names each data line of an event stream by its position and event type.
func frameBodies(t *testing.T, body []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i, f := range sseFrames(t, string(body)) {
		if f[1] == "[DONE]" {
			continue
		}
		out[fmt.Sprintf("%02d %s", i, f[0])] = f[1]
	}
	return out
}

// TestBodyShapes: every /v1 turn body keeps the fields it had, with the same presence,
// absence and nulls, whatever Go types write it.
func TestBodyShapes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	post := func(path, body string) string {
		t.Helper()
		resp, raw := b.do(t, http.MethodPost, path, "Bearer "+b.key, body)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
		return string(raw)
	}
	completed := post("/v1/responses", `{"input":"hi"}`)
	var first struct {
		ID           string `json:"id"`
		Conversation string `json:"x_svc_conversation"`
	}
	require.NoError(t, json.Unmarshal([]byte(completed), &first))
	_, got := b.get(t, "/v1/responses/"+first.ID)
	background := post("/v1/responses", `{"input":"later","background":true}`)
	var queued struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(background), &queued))
	b.waitFinished(t, queued.ID) // before the failure below is queued at the fake vendor
	requireShape(t, "response", map[string]string{
		"completed":       completed,
		"get":             string(got),
		"store false":     post("/v1/responses", `{"input":"hi","store":false}`),
		"continued":       post("/v1/responses", `{"input":"more","previous_response_id":"`+first.ID+`"}`),
		"background":      background,
		"chat":            post("/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`),
		"chat stateful":   post("/v1/chat/completions", `{"conversation":"`+first.Conversation+`","messages":[{"role":"user","content":"hi"}]}`),
		"not found error": func() string { _, raw := b.get(t, "/v1/responses/resp_nope"); return string(raw) }(),
	})

	b.vendors[catalog.Alpha].Push(llmtest.Reply{Status: http.StatusServiceUnavailable})
	require.NoError(t, json.Unmarshal([]byte(post("/v1/responses", `{"input":"x","background":true}`)), &queued))
	b.waitFinished(t, queued.ID)
	_, failed := b.get(t, "/v1/responses/"+queued.ID)
	requireShape(t, "response_failed", map[string]string{"failed": string(failed)})

	streamed := frameBodies(t, []byte(post("/v1/responses", `{"input":"hi","stream":true}`)))
	for k, v := range frameBodies(t, []byte(post("/v1/responses", `{"input":"hi","stream":true,"store":false}`))) {
		streamed["store false "+k] = v
	}
	for k, v := range frameBodies(t, []byte(post("/v1/responses", `{"input":"more","stream":true,"previous_response_id":"`+first.ID+`"}`))) {
		streamed["continued "+k] = v
	}
	requireShape(t, "response_stream", streamed)
	chat := frameBodies(t, []byte(post("/v1/chat/completions",
		`{"stream":true,"stream_options":{"include_usage":true},"conversation":"`+first.Conversation+`","messages":[{"role":"user","content":"hi"}]}`)))
	for k, v := range frameBodies(t, []byte(post("/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`))) {
		chat["ephemeral "+k] = v
	}
	requireShape(t, "chat_stream", chat)
	b.vendors[catalog.Alpha].Push(llmtest.Reply{Text: "a b c d e f", Chunks: 6, CutAfter: 2})
	cut := frameBodies(t, []byte(post("/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`)))
	b.vendors[catalog.Alpha].Push(llmtest.Reply{Text: "a b c d e f", Chunks: 6, CutAfter: 2})
	for k, v := range frameBodies(t, []byte(post("/v1/responses", `{"stream":true,"input":"hi"}`))) {
		cut["responses "+k] = v
	}
	requireShape(t, "stream_errors", cut)
}
