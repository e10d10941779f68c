package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryV1ResponseCarriesTheMiddlewaresRateHeaders: the X-RateLimit-* headers are set
// once, by the middleware, and no handler's response object writes them again (the
// generated code does not know them: gen/v1api/overlay.yaml). Each answer, whatever writes
// its body (generated object, stored body, stream, 201, 204), carries the budget as the
// middleware counted it, and the contract client validates each against openapi/v1.yaml,
// which still declares them.
func TestEveryV1ResponseCarriesTheMiddlewaresRateHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.keyRPM, o.workspaceRPM = 500, 1000 })
	// The budget refills continuously, so Remaining is checked for what the middleware can
	// have said (a spent, unexhausted budget), not for an exact count; a response object
	// writing the headers again would say 0.
	check := func(resp *http.Response, what string) {
		t.Helper()
		require.Equal(t, "500", resp.Header.Get("X-RateLimit-Limit"), what)
		remaining, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
		require.NoError(t, err, what)
		require.True(t, remaining > 0 && remaining < 500, "%s: remaining %d", what, remaining)
		reset, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Reset"))
		require.NoError(t, err, what)
		require.Positive(t, reset, what)
	}
	call := func(method, path, body string, status int) []byte {
		t.Helper()
		resp, raw := b.do(t, method, path, "Bearer "+b.key, body)
		require.Equal(t, status, resp.StatusCode, string(raw))
		check(resp, method+" "+path)
		return raw
	}
	call(http.MethodGet, "/v1/models", "", http.StatusOK)
	call(http.MethodGet, "/v1/models/beta-5.4", "", http.StatusOK)
	var created struct{ ID string }
	require.NoError(t, json.Unmarshal(call(http.MethodPost, "/v1/responses", `{"input":"hi"}`, http.StatusOK), &created))
	call(http.MethodGet, "/v1/responses/"+created.ID, "", http.StatusOK)
	call(http.MethodPost, "/v1/responses", `{"input":"hi","stream":true}`, http.StatusOK)
	call(http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, http.StatusOK)
	call(http.MethodGet, "/v1/responses/resp_unknown", "", http.StatusNotFound)
	var hook struct{ ID string }
	require.NoError(t, json.Unmarshal(call(http.MethodPost, "/v1/webhooks", `{"url":"https://hooks.example.com/x"}`, http.StatusCreated), &hook))
	call(http.MethodGet, "/v1/webhooks", "", http.StatusOK)
	call(http.MethodDelete, "/v1/webhooks/"+hook.ID, "", http.StatusNoContent)

	// The event feed: its headers arrive before any event.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.key)
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	check(resp, "GET /v1/events")
}
