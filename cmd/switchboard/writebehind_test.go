package main

import (
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/llm/llmtest"
)

// TestSIGTERMDrainLosesNoEphemeralSpend: ephemeral chat completions answer before their spend
// is committed (METER_FLUSH_INTERVAL); a SIGTERM right after the last answer still commits
// every one: a ledger row, a turn.completed event each, and the balance agrees with the ledger.
func TestSIGTERMDrainLosesNoEphemeralSpend(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	env["METER_FLUSH_INTERVAL"] = "1s"
	p := startServe(t, env)
	db := env["DATABASE_URL"]
	startBalance := countRows(t, db, `SELECT balance_nano_usd FROM workspaces WHERE name = 'default'`)

	const turns = 20
	var wg sync.WaitGroup
	for range turns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(http.MethodPost, p.base+"/v1/chat/completions",
				strings.NewReader(`{"model":"alpha-sonnet-4-6","messages":[{"role":"user","content":"hi"}]}`))
			if !assert200(t, err) {
				return
			}
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			doJSON(t, req)
		}()
	}
	wg.Wait()
	t.Logf("ledger rows committed when the last turn answered: %d of %d",
		countRows(t, db, `SELECT count(*) FROM ledger WHERE category = 'model_usage'`), turns)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { return strings.Contains(p.logs.String(), `"msg":"stopped"`) }, 20*time.Second, 50*time.Millisecond)

	require.Equal(t, turns, countRows(t, db, `SELECT count(*) FROM ledger WHERE category = 'model_usage'`), "every answered turn is charged")
	require.Equal(t, turns, countRows(t, db, `SELECT count(*) FROM events WHERE type = 'turn.completed'`))
	spent := countRows(t, db, `SELECT -sum(amount_nano_usd)::int FROM ledger WHERE category = 'model_usage'`)
	require.Positive(t, spent)
	require.Equal(t, startBalance-spent, countRows(t, db, `SELECT balance_nano_usd FROM workspaces WHERE name = 'default'`), "balance and ledger agree")
	require.Equal(t, 0, countRows(t, db, `SELECT count(*) FROM (SELECT seq - lag(seq) OVER (PARTITION BY workspace_id ORDER BY seq) AS gap FROM events) g WHERE gap <> 1`), "cursors have no gaps")
}

func assert200(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}
