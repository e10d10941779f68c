package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWriteBehindReservesUncommittedSpend: with write-behind metering an ephemeral turn
// answers before its spend is committed; the balance check counts that spend, so a workspace
// whose credit the turn used up is refused at once, and the charge lands with its event.
func TestWriteBehindReservesUncommittedSpend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, func(o *setupOpts) { o.meterFlush = time.Second })
	_, err := b.store.AddCredit(ctx, "acme", 1-b.workspace.BalanceNanoUSD) // one nano-dollar left
	require.NoError(t, err)
	turn := func() (*http.Response, []byte) {
		return b.do(t, http.MethodPost, "/v1/chat/completions", "Bearer "+b.key, `{"model":"beta-5.4","messages":[{"role":"user","content":"hi"}]}`)
	}
	resp, body := turn()
	require.Equal(t, http.StatusOK, resp.StatusCode, "credit left: %s", body)
	resp, body = turn()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "the first turn's spend, not yet committed, used the credit up: %s", body)
	require.Contains(t, string(body), "no credit left")

	require.Eventually(t, func() bool { return b.count(t, "ledger") == 1 }, 10*time.Second, 20*time.Millisecond)
	w, err := b.store.WorkspaceByName(ctx, "acme")
	require.NoError(t, err)
	require.Negative(t, w.BalanceNanoUSD, "charged after the answer")
	require.Equal(t, 2, b.count(t, "events"), "turn.completed and spend.recorded")
}
