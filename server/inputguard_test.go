package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/catalog"
)

func nestedArrays(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// A body nested deeper than 64 levels is refused before the request validator parses it, on
// /v1 and /api alike, and nothing is written or sent to a model.
func TestNestingBombsAreRefusedBeforeValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	auth := "Bearer " + b.key
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/responses", `{"input":` + nestedArrays(6000) + `}`},
		{http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":` + nestedArrays(65) + `}]}`},
		{http.MethodPost, "/v1/webhooks", `{"url":"https://example.com/h","metadata":` + nestedArrays(100) + `}`},
		{http.MethodPost, "/api/agents", `{"yaml":` + nestedArrays(6000) + `}`},
		{http.MethodPost, "/api/channels", `{"provider":"sms","name":"x","config":{"a":` + nestedArrays(70) + `}}`},
	} {
		resp, raw := b.do(t, tc.method, tc.path, auth, tc.body)
		e := errorOf(t, resp, raw, http.StatusBadRequest)
		require.Equal(t, "nesting_too_deep", str(e.Code), tc.path)
		require.Contains(t, e.Message, "64", tc.path)
		require.Equal(t, "<null>", str(e.Param), tc.path)
	}
	// At the bound, the body reaches the validator, which judges it as usual.
	resp, raw := b.do(t, http.MethodPost, "/v1/responses", auth, `{"input":`+nestedArrays(63)+`}`)
	e := errorOf(t, resp, raw, http.StatusBadRequest)
	require.NotEqual(t, "nesting_too_deep", str(e.Code))
	for _, f := range b.vendors {
		require.Empty(t, f.Requests())
	}
	require.Zero(t, b.count(t, "webhook_endpoints"))
	require.Zero(t, b.count(t, "agents"))
}

// U+0000 anywhere in a request is a 400 naming the field, or a 404 for a path id, by the
// one guard in front of every operation; nothing is written and no model is called.
func TestNULCharactersAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	auth := "Bearer " + b.key
	resp, raw := b.postYAML(t, "/api/agents", voiceAgent)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var agent struct{ AgentID string }
	require.NoError(t, json.Unmarshal(raw, &agent))
	resp, raw = b.do(t, http.MethodPost, "/v1/responses", auth, `{"input":"hello"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	requests, ledger, responses := len(b.vendors[catalog.Beta].Requests())+len(b.vendors[catalog.Alpha].Requests())+len(b.vendors[catalog.Gamma].Requests()),
		b.count(t, "ledger"), b.count(t, "responses")
	balance := b.balance(t)

	for _, tc := range []struct{ method, path, body, param string }{
		{http.MethodPost, "/v1/responses", `{"input":"a\u0000b"}`, "input"},
		{http.MethodPost, "/v1/responses", `{"input":[{"role":"user","content":[{"type":"input_text","text":"\u0000"}]}]}`, "input[0].content[0].text"},
		{http.MethodPost, "/v1/responses", `{"input":"hi","previous_response_id":"resp_\u0000"}`, "previous_response_id"},
		{http.MethodPost, "/v1/responses", `{"input":"hi","stream":true,"instructions":"\u0000"}`, "instructions"},
		{http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"conversation":"mc-\u0000"}`, "conversation"},
		{http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"h\u0000i"}]}`, "messages[0].content"},
		{http.MethodPost, "/v1/webhooks", `{"url":"https://example.com/h","description":"\u0000"}`, "description"},
		{http.MethodPatch, "/api/agents/" + agent.AgentID, `{"name":"Front\u0000Desk"}`, "name"},
		{http.MethodPost, "/api/agents", `{"yaml":"agent:\n  name: a\u0000"}`, "yaml"},
		{http.MethodPost, "/api/channels", `{"provider":"sms","name":"x","config":{"k\u0000":"v"}}`, "config"},
		{http.MethodGet, "/api/agents?status=%00", "", "status"},
		{http.MethodGet, "/v1/events?after=evt_%00", "", "after"},
	} {
		resp, raw := b.do(t, tc.method, tc.path, auth, tc.body)
		e := errorOf(t, resp, raw, http.StatusBadRequest)
		require.Equal(t, "nul_character", str(e.Code), tc.body)
		require.Equal(t, tc.param, str(e.Param), tc.body)
	}
	for _, tc := range []struct{ method, path, code string }{
		{http.MethodGet, "/v1/responses/resp_%00", "response_not_found"},
		{http.MethodGet, "/v1/webhooks/whe-%00", "webhook_not_found"},
		{http.MethodGet, "/v1/webhooks/whe-%00/attempts", "webhook_not_found"},
		{http.MethodDelete, "/v1/webhooks/whe-%00", "webhook_not_found"},
		{http.MethodGet, "/v1/models/beta%00", "model_not_found"},
		{http.MethodGet, "/api/agents/%00", "agent_not_found"},
	} {
		resp, raw := b.do(t, tc.method, tc.path, auth, "")
		e := errorOf(t, resp, raw, http.StatusNotFound)
		require.Equal(t, tc.code, str(e.Code), tc.path)
		require.Equal(t, "id", str(e.Param), tc.path)
	}
	// A query parameter no operation declares is ignored, as any unknown parameter is.
	resp, raw = b.get(t, "/api/channels?junk=%00")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	got := len(b.vendors[catalog.Beta].Requests()) + len(b.vendors[catalog.Alpha].Requests()) + len(b.vendors[catalog.Gamma].Requests())
	require.Equal(t, requests, got, "no refused request reached a model")
	require.Equal(t, ledger, b.count(t, "ledger"))
	require.Equal(t, responses, b.count(t, "responses"))
	require.Equal(t, balance, b.balance(t))
	require.Zero(t, b.count(t, "webhook_endpoints"))
	_, raw = b.get(t, "/api/agents/"+agent.AgentID)
	require.Contains(t, string(raw), `"Front Desk"`)
}

// Paths and queries are not decoded as JSON bodies are (which turns bad bytes into U+FFFD):
// bytes that are not UTF-8, which PostgreSQL refuses as text, are a 404 in a path id and a
// 400 in a query. (Found by FuzzHTTP: GET /v1/webhooks/%A3 answered 500.)
func TestInvalidUTF8InPathsAndQueries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// An escaped `,` makes the path travel escaped (RawPath), and the id is unescaped later.
	for _, path := range []string{"/v1/webhooks/%A3", "/v1/responses/resp_%FF", "/v1/webhooks/%C3%28/attempts", "/v1/webhooks/%CA%2C", "/v1/responses/%00%2C"} {
		resp, raw := b.get(t, path)
		e := errorOf(t, resp, raw, http.StatusNotFound)
		require.Equal(t, "id", str(e.Param), path)
	}
	resp, raw := b.get(t, "/v1/events?types=%A3")
	e := errorOf(t, resp, raw, http.StatusBadRequest)
	require.Equal(t, "invalid_utf8", str(e.Code))
	require.Equal(t, "types", str(e.Param))
}

// Over HTTP, the MCP tools refuse what the /v1 and /api guard refuses, naming the argument;
// nothing is written.
func TestMCPToolsRefuseNULAndNestingBombs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	created := s.ok("create_agent", map[string]any{"yaml": agentYAML("Desk")})
	id := created["agentId"].(string)
	e := s.fails("create_agent", map[string]any{"yaml": agentYAML("Desk\x00Two")}, "nul_character")
	require.Equal(t, "yaml", e["param"])
	e = s.fails("get_agent", map[string]any{"name": "De\x00sk"}, "nul_character")
	require.Equal(t, "name", e["param"])
	e = s.fails("update_agent", map[string]any{"agent_id": id, "updates": map[string]any{"greeting": "Hi\x00"}}, "nul_character")
	require.Equal(t, "updates.greeting", e["param"])
	var bomb any = "x"
	for range 6000 {
		bomb = []any{bomb}
	}
	s.fails("create_agent", map[string]any{"yaml": bomb}, "nesting_too_deep")
	require.Equal(t, 1, b.count(t, "agents"))
	got := s.ok("get_agent", map[string]any{"agent_id": id})
	require.NotContains(t, fmt.Sprint(got), "\x00")
}
