package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/money"
	"switchboard/store"
	"switchboard/store/storetest"
)

// TestGroupCommitSettlesConcurrentTurnsInOrderAndIsolatesAFailure: concurrent stored turns in
// two workspaces commit through one committer with a long window (the batch closes when every
// turn has arrived). One turn's record fails: only that turn fails (and is metered on its
// own); every other turn is stored with its messages. Per workspace the ledger rows' balances
// chain from the starting balance to the workspace's balance, each spend.recorded event
// carries its ledger row's balance, and the event cursors run 1..event_seq without a gap.
func TestGroupCommitSettlesConcurrentTurnsInOrderAndIsolatesAFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	fake := llmtest.NewOpenAI(t)
	models, err := llm.NewRegistry(map[string]llm.FamilyConfig{"beta": {Protocol: "openai", BaseURL: fake.URL, APIKey: "k"}}, false, nil, 0)
	require.NoError(t, err)
	p := agent.New(st, catalog.Default(), models, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g := agent.NewGroupCommit(p, time20s)
	var workspaces []store.Workspace
	for _, name := range []string{"one", "two"} {
		ws, err := st.CreateWorkspace(ctx, name, 5_000_000_000)
		require.NoError(t, err)
		workspaces = append(workspaces, ws)
	}

	// Workspace one: every turn opens a conversation and stores a response record. Workspace
	// two: the turns continue one conversation.
	conv, err := st.CreateConversation(ctx, workspaces[1].ID, "api")
	require.NoError(t, err)
	const turns = 24
	run := func(fail int) ([]error, []*agent.Outcome) {
		errs := make([]error, turns)
		outs := make([]*agent.Outcome, turns)
		var wg sync.WaitGroup
		for i := range turns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				turn := agent.Turn{WorkspaceID: workspaces[i%2].ID, Model: "beta-5.4", Surface: "test", Text: fmt.Sprintf("turn %d", i), Persist: true}
				if i%2 == 1 {
					turn.Conversation = &conv
				} else {
					turn.Record = func(out *agent.Outcome) (store.TurnRecord, error) {
						return store.TurnRecord{Response: store.StoredResponse{ShortID: fmt.Sprintf("resp_gc%d_%d", fail, i), ConversationID: &out.Conversation.ID,
							Status: "completed", Model: "beta-5.4", Body: json.RawMessage(`{}`)}}, nil
					}
				}
				if i == fail {
					turn.Record = func(*agent.Outcome) (store.TurnRecord, error) { return store.TurnRecord{}, errors.New("record failed") }
				}
				outs[i], errs[i] = p.Run(ctx, turn)
			}()
		}
		wg.Wait()
		return errs, outs
	}
	// All succeed: the batches commit whole.
	errs, _ := run(-1)
	for _, err := range errs {
		require.NoError(t, err)
	}
	batches, units := g.Stats()
	t.Logf("%d turns committed in %d transactions", units, batches)
	require.Equal(t, int64(turns), units)
	require.Less(t, batches, int64(turns), "turns were committed together")

	// Turn 5 fails: its batch is written again unit by unit.
	errs, outs := run(5)
	require.NoError(t, g.Close(ctx))
	for i, err := range errs {
		if i == 5 {
			require.ErrorContains(t, err, "record failed")
			continue
		}
		require.NoError(t, err, "turn %d", i)
		if i%2 == 0 {
			history, err := st.History(ctx, workspaces[0].ID, outs[i].Conversation.ID)
			require.NoError(t, err)
			require.Len(t, history, 2)
			require.Equal(t, fmt.Sprintf("turn %d", i), history[0].Content)
			r, err := st.ResponseByShortID(ctx, workspaces[0].ID, fmt.Sprintf("resp_gc5_%d", i))
			require.NoError(t, err)
			require.Equal(t, outs[i].Conversation.ID, *r.ConversationID)
		}
	}
	// The shared conversation holds each surviving turn's pair of messages, never interleaved.
	history, err := st.History(ctx, workspaces[1].ID, conv.ID)
	require.NoError(t, err)
	require.Len(t, history, 2*turns-2)
	for i := 0; i < len(history); i += 2 {
		require.Equal(t, "user", history[i].Role)
		require.Equal(t, "reply to: "+history[i].Content, history[i+1].Content)
	}

	for _, ws := range workspaces {
		var messages int
		require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM messages WHERE workspace_id = $1`, ws.ID).Scan(&messages))
		want := turns
		if ws.ID == workspaces[1].ID {
			want-- // turn 5 failed
		}
		require.Equal(t, 2*want, messages, "a user and an assistant message each")

		// The ledger chains: each row's balance_after is the previous one's less its amount.
		rows, err := st.Pool().Query(ctx, `SELECT amount_nano_usd, balance_after FROM ledger WHERE workspace_id = $1 ORDER BY balance_after DESC`, ws.ID)
		require.NoError(t, err)
		balance, ledgerRows := ws.BalanceNanoUSD, 0
		var afters []int64
		for rows.Next() {
			var amount, after int64
			require.NoError(t, rows.Scan(&amount, &after))
			require.Equal(t, balance+amount, after, "balance_after follows the order of the rows")
			balance = after
			afters = append(afters, after)
			ledgerRows++
		}
		require.NoError(t, rows.Err())
		require.Equal(t, turns, ledgerRows, "every turn is charged, the failed one too")
		var now int64
		require.NoError(t, st.Pool().QueryRow(ctx, `SELECT balance_nano_usd FROM workspaces WHERE id = $1`, ws.ID).Scan(&now))
		require.Equal(t, balance, now, "the balance is the ledger's last balance_after")

		// Cursors 1..event_seq, no gap; spend.recorded carries the ledger's balances.
		events, err := st.EventsAfter(ctx, ws.ID, 0, 1000)
		require.NoError(t, err)
		var seq int64
		require.NoError(t, st.Pool().QueryRow(ctx, `SELECT event_seq FROM workspaces WHERE id = $1`, ws.ID).Scan(&seq))
		require.Len(t, events, int(seq))
		var spent []int64
		for i, e := range events {
			require.Equal(t, int64(i+1), e.Seq)
			if e.Type == "spend.recorded" {
				var env struct {
					Data struct {
						Balance json.Number `json:"balance_usd"`
					} `json:"data"`
				}
				require.NoError(t, json.Unmarshal(e.Envelope, &env))
				b, err := money.ParseUSD(env.Data.Balance.String())
				require.NoError(t, err)
				spent = append(spent, b)
			}
		}
		require.Equal(t, afters, spent, "each spend.recorded event carries the balance after its own charge")
	}
}

const time20s = 20 * time.Second // a window no batch waits for in full: it closes when every turn arrived

// TestGroupCommitTakesTurnsWithTheirCallersWrites: turns with Turn.Also (a channel's reply:
// its answer and charge written with the turn) are group committed, the caller's writes and
// settlements in the turn's batch. One whose writes need a plain transaction (a job's insert)
// gets store.ErrNeedsPlainTx in the pipelined batch and is committed again alone, in a plain
// one: every turn is stored once, with its caller's charge.
func TestGroupCommitTakesTurnsWithTheirCallersWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	fake := llmtest.NewOpenAI(t)
	models, err := llm.NewRegistry(map[string]llm.FamilyConfig{"beta": {Protocol: "openai", BaseURL: fake.URL, APIKey: "k"}}, false, nil, 0)
	require.NoError(t, err)
	p := agent.New(st, catalog.Default(), models, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g := agent.NewGroupCommit(p, time20s)
	ws, err := st.CreateWorkspace(ctx, "also", 5_000_000_000)
	require.NoError(t, err)

	const turns, plain = 8, 3
	var mu sync.Mutex
	var pipelined, plainRuns int
	errs := make([]error, turns)
	var wg sync.WaitGroup
	for i := range turns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turn := agent.Turn{WorkspaceID: ws.ID, Model: "beta-5.4", Surface: "test", Text: fmt.Sprintf("turn %d", i), Persist: true}
			turn.Also = func(ctx context.Context, tx *store.Tx, out *agent.Outcome) ([]store.Settlement, error) {
				if i == plain {
					if tx.Pipelined() {
						return nil, store.ErrNeedsPlainTx
					}
					if _, err := tx.Pgx().Exec(ctx, `SELECT 1`); err != nil {
						return nil, err
					}
					mu.Lock()
					plainRuns++
					mu.Unlock()
				} else if tx.Pipelined() {
					mu.Lock()
					pipelined++
					mu.Unlock()
				}
				return []store.Settlement{{Charge: &store.Charge{AmountNanoUSD: 1_000, Category: "sms", ConversationID: &out.Conversation.ID}}}, nil
			}
			_, errs[i] = p.Run(ctx, turn)
		}()
	}
	wg.Wait()
	require.NoError(t, g.Close(ctx))
	for i, err := range errs {
		require.NoError(t, err, "turn %d", i)
	}
	require.Equal(t, 1, plainRuns, "the turn needing a plain transaction was committed in one, once")
	require.Positive(t, pipelined, "the others were written in pipelined batches")
	var messages, sms int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM messages WHERE workspace_id = $1`, ws.ID).Scan(&messages))
	require.Equal(t, 2*turns, messages, "each turn's question and answer, once")
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM ledger WHERE workspace_id = $1 AND category = 'sms'`, ws.ID).Scan(&sms))
	require.Equal(t, turns, sms, "each caller's charge, once")
}
