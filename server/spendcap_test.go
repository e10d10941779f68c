package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

// TestMonthlySpendCapRefusesTurnsOnly: a cap below one turn's cost lets that turn finish and
// refuses the next with 403 insufficient_quota saying when the cap resets; reading goes on;
// raising or clearing the cap lets turns through again.
func TestMonthlySpendCapRefusesTurnsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	turn := func() (*http.Response, []byte) {
		return b.do(t, http.MethodPost, "/v1/chat/completions", "Bearer "+b.key, `{"model":"beta-5.4","messages":[{"role":"user","content":"hi"}]}`)
	}

	tiny := int64(1000) // $0.000001: below any turn's cost
	_, err := b.store.SetMonthlyCap(ctx, "acme", &tiny)
	require.NoError(t, err)
	resp, body := turn()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the month's spend is below the cap: %s", body)
	w, err := b.store.WorkspaceByName(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, b.workspace.BalanceNanoUSD-w.BalanceNanoUSD, w.MonthSpendNanoUSD, "the month's counter moved with the balance")
	require.Greater(t, w.MonthSpendNanoUSD, tiny)

	resets := store.NextMonth(time.Now()).Format("2006-01-02")
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"beta-5.4","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/responses", `{"model":"beta-5.4","input":"hi"}`},
		{"/api/chat", `{"message":"hi"}`},
	} {
		resp, body = b.do(t, http.MethodPost, c.path, "Bearer "+b.key, c.body)
		e := errorOf(t, resp, body, http.StatusForbidden)
		require.Equal(t, "insufficient_quota", e.Type, c.path)
		require.Equal(t, "insufficient_quota", str(e.Code), c.path)
		require.Contains(t, e.Message, "monthly spend cap of $0.000001", c.path)
		require.Contains(t, e.Message, "resets on "+resets+" 00:00 UTC", c.path)
		require.Contains(t, e.Hint, "workspaces cap", c.path)
	}
	for _, path := range []string{"/v1/models", "/api/agents", "/api/keys"} {
		resp, body = b.do(t, http.MethodGet, path, "Bearer "+b.key, "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s is never refused by the cap: %s", path, body)
	}
	require.Len(t, b.vendors["beta"].Requests(), 1, "refused turns never reach the vendor")

	raised := int64(1_000_000_000)
	_, err = b.store.SetMonthlyCap(ctx, "acme", &raised)
	require.NoError(t, err)
	resp, body = turn()
	require.Equal(t, http.StatusOK, resp.StatusCode, "a raised cap lets the turn through: %s", body)

	_, err = b.store.SetMonthlyCap(ctx, "acme", &tiny)
	require.NoError(t, err)
	resp, _ = turn()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	_, err = b.store.SetMonthlyCap(ctx, "acme", nil)
	require.NoError(t, err)
	resp, body = turn()
	require.Equal(t, http.StatusOK, resp.StatusCode, "no cap: %s", body)
}
