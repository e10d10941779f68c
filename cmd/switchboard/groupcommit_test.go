package main

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/llm/llmtest"
)

// TestSIGKILLUnderLoadLosesNoStoredResponse: stored responses from 32 clients (the official
// OpenAI Go client) commit through the group committer; the server is SIGKILLed mid-load.
// Every response that was answered 200 exists with its conversation's messages, every stored
// response was charged exactly once, the balance is the starting balance plus the ledger,
// and the workspace's event cursors run 1..event_seq without a gap.
func TestSIGKILLUnderLoadLosesNoStoredResponse(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	env["RATE_LIMIT_KEY_RPM"], env["RATE_LIMIT_WORKSPACE_RPM"] = "100000000", "100000000"
	p := startServe(t, env)
	db := env["DATABASE_URL"]
	startBalance := countRows(t, db, `SELECT balance_nano_usd FROM workspaces WHERE name = 'default'`)

	client := openai.NewClient(option.WithBaseURL(p.base+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0),
		option.WithRequestTimeout(30*time.Second))
	const clients, killAfter = 32, 300
	var (
		mu       sync.Mutex
		answered []string // ids of the responses answered 200
		killed   atomic.Bool
		wg       sync.WaitGroup
	)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !killed.Load() {
				r, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
					Model: "alpha-sonnet-4-6",
					Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")},
				})
				if err != nil {
					if !killed.Load() {
						t.Errorf("before the kill: %v", err)
					}
					return
				}
				mu.Lock()
				answered = append(answered, r.ID)
				n := len(answered)
				mu.Unlock()
				if n == killAfter && killed.CompareAndSwap(false, true) {
					// Mid-load: the other clients' turns are in flight, some in a batch.
					if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	require.True(t, killed.Load())
	t.Logf("%d responses answered 200 before the kill", len(answered))

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var found int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM responses r
		WHERE r.short_id = ANY($1) AND r.status = 'completed'
		AND (SELECT count(*) FROM messages m WHERE m.conversation_id = r.conversation_id) = 2`, answered).Scan(&found))
	require.Equal(t, len(answered), found, "every response answered 200 is stored, with its messages")

	stored := countRows(t, db, `SELECT count(*) FROM responses`)
	require.GreaterOrEqual(t, stored, len(answered), "responses committed but not yet answered at the kill may exist too")
	require.Equal(t, stored, countRows(t, db, `SELECT count(*) FROM ledger WHERE category = 'model_usage'`), "each stored response charged once")
	require.Equal(t, stored, countRows(t, db, `SELECT count(*) FROM events WHERE type = 'turn.completed'`))
	spent := countRows(t, db, `SELECT coalesce(-sum(amount_nano_usd), 0)::int FROM ledger WHERE category = 'model_usage'`)
	require.Positive(t, spent)
	require.Equal(t, startBalance-spent, countRows(t, db, `SELECT balance_nano_usd FROM workspaces WHERE name = 'default'`), "balance and ledger agree")
	seq := countRows(t, db, `SELECT event_seq FROM workspaces WHERE name = 'default'`)
	require.Equal(t, seq, countRows(t, db, `SELECT count(*) FROM events e JOIN workspaces w ON w.id = e.workspace_id WHERE w.name = 'default'`))
	require.Equal(t, seq, countRows(t, db, `SELECT coalesce(max(e.seq), 0)::int FROM events e JOIN workspaces w ON w.id = e.workspace_id WHERE w.name = 'default'`),
		"cursors run 1..event_seq: no gap")
}
