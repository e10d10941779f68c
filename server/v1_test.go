package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"

	"switchboard/store"
)

func TestModelsThroughTheOfficialClient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	client := b.openai(b.key)
	ctx := context.Background()

	page, err := client.Models.List(ctx)
	require.NoError(t, err)
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		require.Equal(t, "model", string(m.Object))
		require.NotZero(t, m.Created)
		require.Contains(t, []string{"alpha", "beta", "gamma"}, m.OwnedBy)
	}
	require.Equal(t, []string{"alpha-sonnet-4-6", "alpha-haiku-4-5", "alpha-opus-4-7", "beta-5.4", "beta-5.4-mini", "gamma-v4-flash", "gamma-v4-pro"}, ids)

	m, err := client.Models.Get(ctx, "beta-5.4-mini")
	require.NoError(t, err)
	require.Equal(t, "beta", m.OwnedBy)

	_, err = client.Models.Get(ctx, "gpt-4o")
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	require.Equal(t, "model_not_found", apiErr.Code)
}

func TestEveryBadKeyIsA401WithHintAndHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	revoked := b.newKey(t, b.workspace, "viewer")
	keys, err := b.store.ListKeys(context.Background(), b.workspace.ID)
	require.NoError(t, err)
	_, err = b.store.RevokeKey(context.Background(), keys[len(keys)-1].ID)
	require.NoError(t, err)

	cases := map[string]struct{ auth, code string }{
		"missing":     {"", "missing_api_key"},
		"not bearer":  {"Basic " + b.key, "invalid_authorization_header"},
		"no token":    {"Bearer", "invalid_authorization_header"},
		"malformed":   {"Bearer sk-svc_tooshort", "invalid_api_key"},
		"wrong shape": {"Bearer sk-live_" + strings.Repeat("a", 43), "invalid_api_key"},
		"unknown":     {"Bearer sk-svc_" + strings.Repeat("A", 43), "invalid_api_key"},
		"revoked":     {"Bearer " + revoked, "invalid_api_key"},
	}
	for name, tc := range cases {
		resp, body := b.do(t, http.MethodGet, "/v1/models", tc.auth, "")
		e := errorOf(t, resp, body, http.StatusUnauthorized)
		require.Equal(t, "authentication_error", e.Type, name)
		require.Equal(t, tc.code, str(e.Code), name)
		require.NotEmpty(t, e.Hint, name)
		require.Equal(t, "http://switchboard.test/docs/errors#authentication_error", e.DocsURL, name)
		require.NotEmpty(t, resp.Header.Get("X-RateLimit-Limit"), name)
		require.NotEmpty(t, resp.Header.Get("X-Request-Id"), name)
	}
	resp, _ := b.do(t, http.MethodGet, "/v1/models", "bearer "+b.key, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "the scheme is case-insensitive")
}

func TestUnavailableWorkspaceIs403InsufficientQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	_, err := b.store.SetWorkspaceStatus(ctx, "acme", store.WorkspaceSuspended)
	require.NoError(t, err)
	resp, body := b.get(t, "/v1/models")
	e := errorOf(t, resp, body, http.StatusForbidden)
	require.Equal(t, "insufficient_quota", e.Type)
	require.Equal(t, "insufficient_quota", str(e.Code))
	require.Contains(t, e.Message, "suspended")

	_, err = b.store.SetWorkspaceStatus(ctx, "acme", store.WorkspaceActive)
	require.NoError(t, err)
	resp, _ = b.get(t, "/v1/models")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	_, err = b.store.AddCredit(ctx, "acme", -b.workspace.BalanceNanoUSD)
	require.NoError(t, err)
	resp, body = b.get(t, "/v1/models")
	e = errorOf(t, resp, body, http.StatusForbidden)
	require.Equal(t, "insufficient_quota", str(e.Code))
	require.Contains(t, e.Message, "no credit")
}

func TestKeyBudgetGives429WithAllHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.keyRPM = 3 })

	for i := 0; i < 3; i++ {
		resp, body := b.get(t, "/v1/models")
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		require.Equal(t, "3", resp.Header.Get("X-RateLimit-Limit"))
		require.Equal(t, strconv.Itoa(2-i), resp.Header.Get("X-RateLimit-Remaining"))
		require.NotEmpty(t, resp.Header.Get("X-RateLimit-Reset"))
	}
	resp, body := b.get(t, "/v1/models")
	e := errorOf(t, resp, body, http.StatusTooManyRequests)
	require.Equal(t, "rate_limit_error", e.Type)
	require.Equal(t, "rate_limit_exceeded", str(e.Code))
	require.NotEmpty(t, e.Hint)
	require.NotEmpty(t, e.DocsURL)
	retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, retry)
	require.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))
	reset, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Reset"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, reset, retry)

	other := b.newKey(t, b.workspace, "member")
	resp, _ = b.do(t, http.MethodGet, "/v1/models", "Bearer "+other, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "another key has its own budget")
}

func TestWorkspaceBudgetIsSharedByItsKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.keyRPM, o.workspaceRPM = 100, 2 })
	second := b.newKey(t, b.workspace, "member")
	resp, _ := b.get(t, "/v1/models")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("X-RateLimit-Limit"), "the tighter budget is reported")
	resp, _ = b.do(t, http.MethodGet, "/v1/models", "Bearer "+second, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, body := b.do(t, http.MethodGet, "/v1/models", "Bearer "+second, "")
	errorOf(t, resp, body, http.StatusTooManyRequests)

	ws2, err := b.store.CreateWorkspace(context.Background(), "other", 1_000_000_000)
	require.NoError(t, err)
	resp, _ = b.do(t, http.MethodGet, "/v1/models", "Bearer "+b.newKey(t, ws2, "member"), "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "another workspace has its own budget")
}

func TestUnauthenticatedCallersAreLimitedPerAddress(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.keyRPM = 2 })
	for i := 0; i < 2; i++ {
		resp, body := b.do(t, http.MethodGet, "/v1/models", "Bearer sk-svc_"+strings.Repeat("x", 43), "")
		errorOf(t, resp, body, http.StatusUnauthorized)
	}
	resp, body := b.do(t, http.MethodGet, "/v1/models", "Bearer sk-svc_"+strings.Repeat("x", 43), "")
	errorOf(t, resp, body, http.StatusTooManyRequests)
	resp, _ = b.get(t, "/v1/models")
	require.Equal(t, http.StatusOK, resp.StatusCode, "a valid key is not charged for guesses from its address")
}

func TestValidationErrorsNameTheField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	auth := "Bearer " + b.key
	cases := []struct {
		name, method, path, body, param, code string
	}{
		{"enum in an array item", "POST", "/v1/chat/completions", `{"messages":[{"role":"wizard","content":"hi"}]}`, "messages[0].role", "invalid_value"},
		{"missing required field", "POST", "/v1/chat/completions", `{"model":"beta-5.4"}`, "messages", "invalid_value"},
		{"missing required in item", "POST", "/v1/chat/completions", `{"messages":[{"role":"user"}]}`, "messages[0].content", "invalid_value"},
		{"unknown model", "POST", "/v1/responses", `{"model":"gpt-4o","input":"hi"}`, "model", "model_not_found"},
		{"wrong type", "POST", "/v1/responses", `{"input":5}`, "input", "invalid_value"},
		{"unknown webhook field", "POST", "/v1/webhooks", `{"url":"https://example.com/hook","colour":"red"}`, "colour", "invalid_value"},
		{"too long description", "POST", "/v1/webhooks", `{"url":"https://example.com/hook","description":"` + strings.Repeat("d", 501) + `"}`, "description", "invalid_value"},
		{"bad event type", "POST", "/v1/webhooks", `{"url":"https://example.com/hook","event_types":["turn.done"]}`, "event_types[0]", "invalid_value"},
		{"limit above range", "GET", "/v1/webhooks?limit=201", ``, "limit", "invalid_parameter"},
		{"limit below range", "GET", "/v1/webhooks?limit=0", ``, "limit", "invalid_parameter"},
		{"limit not a number", "GET", "/v1/webhooks?limit=ten", ``, "limit", "invalid_parameter"},
		{"negative cursor", "GET", "/v1/events?after=-1", ``, "after", "invalid_parameter"},
	}
	for _, tc := range cases {
		resp, body := b.do(t, tc.method, tc.path, auth, tc.body)
		e := errorOf(t, resp, body, http.StatusBadRequest)
		require.Equal(t, "invalid_request_error", e.Type, tc.name)
		require.Equal(t, tc.param, str(e.Param), tc.name+": "+string(body))
		require.Equal(t, tc.code, str(e.Code), tc.name)
		require.NotContains(t, e.Message, "Schema:", tc.name+": no schema dumps in messages")
	}

	resp, body := b.do(t, "POST", "/v1/responses", auth, `{"input": "hi",`)
	e := errorOf(t, resp, body, http.StatusBadRequest)
	require.Equal(t, "invalid_json", str(e.Code))
}

func TestFrameAnswersInTheEnvelope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, body := b.get(t, "/v1/nothing-here")
	require.Equal(t, "unknown_route", str(errorOf(t, resp, body, http.StatusNotFound).Code))
	resp, body = b.do(t, http.MethodGet, "/elsewhere", "", "")
	require.Equal(t, "unknown_route", str(errorOf(t, resp, body, http.StatusNotFound).Code))
	resp, body = b.do(t, http.MethodDelete, "/v1/models", "Bearer "+b.key, "")
	require.Equal(t, "method_not_allowed", str(errorOf(t, resp, body, http.StatusMethodNotAllowed).Code))
	resp, body = b.do(t, http.MethodPost, "/v1/responses", "Bearer "+b.key, `{"input":"`+strings.Repeat("x", 2<<20)+`"}`)
	require.Equal(t, "request_too_large", str(errorOf(t, resp, body, http.StatusRequestEntityTooLarge).Code))
	require.NotEmpty(t, resp.Header.Get("X-RateLimit-Limit"))
}

func TestPublicRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)

	resp, body := b.do(t, http.MethodGet, "/health", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, `{"status":"ok"}`, string(body), "liveness only: the checks are GET /ready's")

	resp, body = b.do(t, http.MethodGet, "/llms.txt", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	for _, want := range []string{"Authorization: Bearer sk-svc_", "/openapi/v1.yaml", "/v1/chat/completions"} {
		require.Contains(t, string(body), want)
	}

	resp, body = b.do(t, http.MethodGet, "/openapi/v1.yaml", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "openapi: 3.0.3")

	resp, body = b.do(t, http.MethodGet, "/openapi/v1.json", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(body, &doc))
	require.Contains(t, doc["paths"], "/v1/chat/completions")
	require.Contains(t, string(body), "X-RateLimit-Remaining", "the published contract, not the generation-only view")

	resp, body = b.do(t, http.MethodGet, "/docs/errors", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "## rate_limit_error")
}
