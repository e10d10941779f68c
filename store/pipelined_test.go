package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// pipeWorkspace is a store on a fresh database with a workspace "pipe" of that credit.
func pipeWorkspace(t *testing.T, credit int64) (*store.Store, store.Workspace) {
	t.Helper()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(context.Background(), "pipe", credit)
	require.NoError(t, err)
	return s, w
}

// newTurns are two new conversations' turns of workspace ws, as the group commit writes them.
func newTurns(ws uuid.UUID, tag string) []*store.TurnWrite {
	return []*store.TurnWrite{
		{WorkspaceID: ws, NewShortID: "mc-" + tag + "1", Messages: []store.Message{
			{Role: "user", Content: "hi"},
			{Role: "assistant", Content: "hello", ToolCalls: json.RawMessage(`[{"id":"call_1"}]`)}}},
		{WorkspaceID: ws, NewShortID: "mc-" + tag + "2", Messages: []store.Message{{Role: "user", Content: "again"}}},
	}
}

// recordsOf are a response record for each turn, in its conversation.
func recordsOf(turns []*store.TurnWrite) ([]uuid.UUID, []store.TurnRecord) {
	var workspaces []uuid.UUID
	var records []store.TurnRecord
	for _, w := range turns {
		workspaces = append(workspaces, w.WorkspaceID)
		records = append(records, store.TurnRecord{Response: store.StoredResponse{ShortID: "resp_" + w.NewShortID,
			ConversationID: &w.Conversation.ID, Status: "completed", Model: "m", Body: json.RawMessage(`{"id":"resp_` + w.NewShortID + `"}`)}})
	}
	return workspaces, records
}

// spend is a settlement of cost and its spend.recorded event, which carries the balance
// after the charge.
func spend(cost int64) store.Settlement {
	return store.Settlement{Charge: &store.Charge{AmountNanoUSD: cost, Category: "model_usage", Model: "m"},
		Events: []store.NewEvent{{Type: "spend.recorded", Data: store.AfterCharge{Head: `{"balance_usd":`, Tail: `,"cost":` + strconv.FormatInt(cost, 10) + `}`}}}}
}

// eventData is the data of the workspace's events, in cursor order.
func eventData(t *testing.T, s *store.Store, ws uuid.UUID) []string {
	t.Helper()
	var data []string
	require.NoError(t, s.Pool().QueryRow(context.Background(),
		`SELECT coalesce(array_agg(envelope::jsonb->>'data' ORDER BY seq), '{}') FROM events WHERE workspace_id = $1`, ws).Scan(&data))
	return data
}

func count(t *testing.T, s *store.Store, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, s.Pool().QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// TestPipelinedTurnsTravelInOneRoundTrip: a batch of new turns (conversations, messages,
// responses, their settlement) reaches PostgreSQL in one round trip, with COMMIT, so nothing
// waits on this process while the workspace is locked; all of it is there afterwards, each
// spend event with the balance after its charge, and its events are announced (one notice:
// the workspace and its cursors) only when the caller runs announce.
func TestPipelinedTurnsTravelInOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, w := pipeWorkspace(t, 1000)
	listener, err := s.Pool().Acquire(ctx)
	require.NoError(t, err)
	defer listener.Release()
	_, err = listener.Exec(ctx, "LISTEN "+store.EventChannel)
	require.NoError(t, err)

	turns := newTurns(w.ID, "pipe")
	var txn *store.Tx
	var beforeSettle, afterSettle int
	announce, err := s.Pipelined(ctx, func(tx *store.Tx) error {
		txn = tx
		if err := tx.WriteTurns(ctx, turns); err != nil {
			return err
		}
		workspaces, records := recordsOf(turns)
		if err := tx.InsertTurnRecords(ctx, workspaces, records); err != nil {
			return err
		}
		beforeSettle = store.RoundTrips(tx)
		err := tx.SettleMany(ctx, w.ID, []store.Settlement{spend(100), spend(200)})
		afterSettle = store.RoundTrips(tx)
		return err
	})
	require.NoError(t, err)
	require.Equal(t, 0, beforeSettle, "the turns' writes wait")
	require.Equal(t, 0, afterSettle, "the settlement waits too")
	require.Equal(t, 1, store.RoundTrips(txn), "all of it travels with COMMIT")

	for _, turn := range turns {
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM conversations WHERE id = $1 AND short_id = $2 AND message_seq = $3`,
			turn.Conversation.ID, turn.NewShortID, len(turn.Messages)), turn.NewShortID)
		require.Equal(t, 1, count(t, s, `SELECT count(*) FROM responses WHERE conversation_id = $1`, turn.Conversation.ID))
	}
	history, err := s.History(ctx, w.ID, turns[0].Conversation.ID)
	require.NoError(t, err)
	require.Len(t, history, 2)
	require.Equal(t, "hello", history[1].Content)
	require.JSONEq(t, `[{"id":"call_1"}]`, string(history[1].ToolCalls))
	require.Nil(t, history[0].ToolCalls, "absent JSON is stored as NULL")
	got, err := s.WorkspaceByName(ctx, "pipe")
	require.NoError(t, err)
	require.Equal(t, int64(700), got.BalanceNanoUSD)
	require.Equal(t, 2, count(t, s, `SELECT count(*) FROM ledger WHERE workspace_id = $1`, w.ID))
	require.Equal(t, []string{`{"cost": 100, "balance_usd": 0.0000009}`, `{"cost": 200, "balance_usd": 0.0000007}`}, eventData(t, s, w.ID))

	quiet, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = listener.Conn().WaitForNotification(quiet)
	require.Error(t, err, "nothing is announced before announce runs")
	announce()
	heard, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	n, err := listener.Conn().WaitForNotification(heard)
	require.NoError(t, err)
	notices, err := store.DecodeNotices(n.Payload)
	require.NoError(t, err)
	require.Equal(t, []store.Notice{{WorkspaceID: w.ID, First: 1, Last: 2}}, notices, "one notice for the workspace's events")
}

// TestPipelinedErrorRollsBackTheBatch: a write that waits fails with the statement it
// travels with (a conversation of a workspace that does not exist, at the other workspace's
// lock), the whole transaction rolls back, and the connection goes back to the pool usable.
func TestPipelinedErrorRollsBackTheBatch(t *testing.T) {
	ctx := context.Background()
	s, w := pipeWorkspace(t, 1000)
	turns := append(newTurns(w.ID, "ok"), newTurns(uuid.New(), "gone")...)
	announce, err := s.Pipelined(ctx, func(tx *store.Tx) error {
		if err := tx.WriteTurns(ctx, turns); err != nil {
			return err
		}
		return tx.SettleMany(ctx, w.ID, []store.Settlement{spend(100)})
	})
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%v", err)
	require.Equal(t, "23503", pgErr.Code)
	require.Nil(t, announce)
	require.Equal(t, 0, count(t, s, `SELECT count(*) FROM conversations`))
	got, err := s.WorkspaceByName(ctx, "pipe")
	require.NoError(t, err)
	require.Equal(t, int64(1000), got.BalanceNanoUSD)

	// Failing at COMMIT (nothing after the write to travel with) ends the same way.
	_, err = s.Pipelined(ctx, func(tx *store.Tx) error { return tx.WriteTurns(ctx, newTurns(uuid.New(), "late")) })
	require.True(t, errors.As(err, &pgErr), "%v", err)
	require.Equal(t, 0, count(t, s, `SELECT count(*) FROM conversations`))

	// Every connection of the pool is usable afterwards, none left inside a transaction.
	for i := range 2 * int(s.Pool().Stat().MaxConns()) {
		_, err := s.Pipelined(ctx, func(tx *store.Tx) error {
			return tx.WriteTurns(ctx, newTurns(w.ID, "again"+string(rune('a'+i%26))+string(rune('a'+i/26))))
		})
		require.NoError(t, err)
	}
}

// TestPipelinedGoneWorkspaceRollsBackTheBatch: the settlement travels with COMMIT, so a
// workspace that is gone must fail it in the database: the other workspace's charge, settled
// in the same batch with nothing else written (a write-behind flush), is rolled back too, and
// the error is the store's not-found.
func TestPipelinedGoneWorkspaceRollsBackTheBatch(t *testing.T) {
	ctx := context.Background()
	s, w := pipeWorkspace(t, 1000)
	var txn *store.Tx
	_, err := s.Pipelined(ctx, func(tx *store.Tx) error {
		txn = tx
		ids := []uuid.UUID{w.ID, uuid.New()}
		if bytes.Compare(ids[0][:], ids[1][:]) > 0 {
			ids[0], ids[1] = ids[1], ids[0]
		}
		return tx.SettleWorkspaces(ctx, ids, [][]store.Settlement{{spend(100)}, {spend(100)}})
	})
	require.ErrorIs(t, err, store.ErrNotFound)
	var nf *store.NotFoundError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, "workspace", nf.What)
	require.Equal(t, 1, store.RoundTrips(txn))
	got, err := s.WorkspaceByName(ctx, "pipe")
	require.NoError(t, err)
	require.Equal(t, int64(1000), got.BalanceNanoUSD, "rolled back")
	require.Zero(t, count(t, s, `SELECT count(*) FROM ledger`))
	require.Zero(t, count(t, s, `SELECT count(*) FROM events`))
}

// TestPipelinedNotFoundKeepsTheTransaction: a row that is not there is an answer, not a
// failure: the transaction goes on and commits.
func TestPipelinedNotFoundKeepsTheTransaction(t *testing.T) {
	ctx := context.Background()
	s, w := pipeWorkspace(t, 1000)
	turns := newTurns(w.ID, "nf")
	_, err := s.Pipelined(ctx, func(tx *store.Tx) error {
		if err := tx.WriteTurns(ctx, turns); err != nil {
			return err
		}
		_, err := tx.ConversationByRef(ctx, w.ID, "mc-nothere")
		require.ErrorIs(t, err, store.ErrNotFound)
		c, err := tx.ConversationByRef(ctx, w.ID, turns[0].NewShortID)
		require.NoError(t, err, "the transaction reads its own writes")
		require.Equal(t, turns[0].Conversation.ID, c.ID)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, count(t, s, `SELECT count(*) FROM conversations WHERE workspace_id = $1`, w.ID))
	require.Panics(t, func() {
		_, _ = s.Pipelined(ctx, func(tx *store.Tx) error { tx.Pgx(); return nil })
	}, "the job queue cannot use a pipelined transaction")
}

// TestPipelinedContinuedConversations: turns continuing conversations (two of one, one of
// another) number their messages after what the conversations hold, in the order given, in
// the same round trip; a conversation that is gone, or another workspace's, fails the batch
// as not found, and rolls it back although it travelled with COMMIT.
func TestPipelinedContinuedConversations(t *testing.T) {
	ctx := context.Background()
	s, w := pipeWorkspace(t, 1000)
	first := newTurns(w.ID, "cont")
	_, err := s.Pipelined(ctx, func(tx *store.Tx) error { return tx.WriteTurns(ctx, first) })
	require.NoError(t, err)
	a, b := first[0].Conversation, first[1].Conversation // 2 messages and 1
	more := func(c *store.Conversation, text string) *store.TurnWrite {
		return &store.TurnWrite{WorkspaceID: w.ID, Conversation: c, Messages: []store.Message{{Role: "user", Content: text}, {Role: "assistant", Content: text + "!"}}}
	}
	var txn *store.Tx
	writes := []*store.TurnWrite{more(a, "a3"), more(b, "b2"), more(a, "a5")}
	_, err = s.Pipelined(ctx, func(tx *store.Tx) error {
		txn = tx
		if err := tx.WriteTurns(ctx, writes); err != nil {
			return err
		}
		return tx.SettleMany(ctx, w.ID, []store.Settlement{spend(1)})
	})
	require.NoError(t, err)
	require.Equal(t, 1, store.RoundTrips(txn))
	require.Nil(t, first[0].Written, "a new conversation's rows are not reported")
	// Each continued turn learns its rows' seqs and versions, as a read gives them back.
	for i, want := range [][]int{{3, 4}, {2, 3}, {5, 6}} {
		require.Len(t, writes[i].Written, 2)
		for k, seq := range want {
			got := writes[i].Written[k]
			require.Equal(t, seq, got.Seq, "turn %d, message %d", i, k)
			require.Equal(t, count(t, s, `SELECT xmin::text::bigint FROM messages WHERE conversation_id = $1 AND seq = $2`,
				writes[i].Conversation.ID, seq), int(got.Version))
		}
	}
	var contents []string
	for _, c := range []*store.Conversation{a, b} {
		history, err := s.History(ctx, w.ID, c.ID)
		require.NoError(t, err)
		for _, m := range history {
			contents = append(contents, m.Content)
		}
	}
	require.Equal(t, []string{"hi", "hello", "a3", "a3!", "a5", "a5!", "again", "b2", "b2!"}, contents)
	require.Equal(t, 6, count(t, s, `SELECT message_seq FROM conversations WHERE id = $1`, a.ID))
	require.Equal(t, 6, count(t, s, `SELECT max(seq) FROM messages WHERE conversation_id = $1`, a.ID))

	gone := &store.Conversation{ID: uuid.New(), ShortID: "mc-gone", Channel: "api"}
	failed := []*store.TurnWrite{more(a, "a7"), more(gone, "x")}
	_, err = s.Pipelined(ctx, func(tx *store.Tx) error {
		if err := tx.WriteTurns(ctx, failed); err != nil {
			return err
		}
		return tx.SettleMany(ctx, w.ID, []store.Settlement{spend(1)})
	})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Nil(t, failed[0].Written, "nothing reported of a batch rolled back")
	require.Equal(t, 6, count(t, s, `SELECT message_seq FROM conversations WHERE id = $1`, a.ID), "rolled back")

	// Another workspace's conversation is not found either, and nothing of it is written.
	other, err := s.CreateWorkspace(ctx, "other", 1000)
	require.NoError(t, err)
	theirs := newTurns(other.ID, "theirs")
	_, err = s.Pipelined(ctx, func(tx *store.Tx) error { return tx.WriteTurns(ctx, theirs) })
	require.NoError(t, err)
	_, err = s.Pipelined(ctx, func(tx *store.Tx) error {
		return tx.WriteTurns(ctx, []*store.TurnWrite{more(a, "a7"), more(theirs[0].Conversation, "x")})
	})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, 2, count(t, s, `SELECT message_seq FROM conversations WHERE id = $1`, theirs[0].Conversation.ID))
	require.Equal(t, 6, count(t, s, `SELECT message_seq FROM conversations WHERE id = $1`, a.ID), "rolled back")
}

// TestPipelinedRevokesBeforeItReturns: a charge that uses the workspace's credit up is
// heard by this process's watchers (its cached keys) before Pipelined returns, not with the
// announcements left to the caller: the request that follows the answer is refused.
func TestPipelinedRevokesBeforeItReturns(t *testing.T) {
	ctx := context.Background()
	s, w := pipeWorkspace(t, 100)
	var heard []uuid.UUID
	s.Watch(func(r store.Revocation) {
		if r.WorkspaceID != nil {
			heard = append(heard, *r.WorkspaceID)
		}
	})
	announce, err := s.Pipelined(ctx, func(tx *store.Tx) error {
		return tx.SettleMany(ctx, w.ID, []store.Settlement{spend(60)})
	})
	require.NoError(t, err)
	require.Empty(t, heard, "credit left: nothing to revoke")
	announce()
	announce, err = s.Pipelined(ctx, func(tx *store.Tx) error {
		return tx.SettleMany(ctx, w.ID, []store.Settlement{spend(60)})
	})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{w.ID}, heard, "heard before announce runs")
	announce()
	require.Len(t, heard, 1, "once")
}
