package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestNotFoundSaysWhat: a missing row is ErrNotFound for errors.Is, and a *NotFoundError
// naming what was missing for errors.As; "no rows" and "no row changed" look the same.
func TestNotFoundSaysWhat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)

	for what, err := range map[string]error{
		"response": func() error { _, err := s.ResponseByShortID(ctx, w.ID, "resp_nope"); return err }(),
		"agent":    s.DeleteAgent(ctx, w.ID, uuid.New()),
		"webhook endpoint": func() error {
			_, err := s.WebhookEndpointByRef(ctx, w.ID, uuid.NewString())
			return err
		}(),
	} {
		require.ErrorIs(t, err, store.ErrNotFound, what)
		var nf *store.NotFoundError
		require.True(t, errors.As(err, &nf), what)
		require.Equal(t, what, nf.What)
	}
}

// TestQueriesRunOnPoolAndInTx: the same methods run on the pool and in a transaction; in a
// transaction they see its uncommitted writes, which the pool does not.
func TestQueriesRunOnPoolAndInTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)
	r := store.StoredResponse{ShortID: "resp_both", Status: "queued", Model: "m", Background: true, Body: json.RawMessage(`{"status":"queued"}`)}

	require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
		require.NoError(t, tx.InsertResponse(ctx, w.ID, r))
		got, err := tx.ResponseByShortID(ctx, w.ID, r.ShortID)
		require.NoError(t, err)
		require.Equal(t, "queued", got.Status)
		_, err = s.ResponseByShortID(ctx, w.ID, r.ShortID)
		require.ErrorIs(t, err, store.ErrNotFound, "not committed yet")
		return nil
	}))

	r.Status, r.Body = "completed", json.RawMessage(`{"status":"completed"}`)
	require.NoError(t, s.FinishResponse(ctx, w.ID, r))
	require.ErrorIs(t, s.FinishResponse(ctx, w.ID, r), store.ErrNotFound, "a response finishes once")
	got, err := s.ResponseByShortID(ctx, w.ID, r.ShortID)
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"completed"}`, string(got.Body))
}

// TestSettleOnThePool: Settle outside a transaction charges and appends in one of its own,
// and its events get the next cursors.
func TestSettleOnThePool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "acme", 1_000)
	require.NoError(t, err)

	balance, events, err := s.Settle(ctx, w.ID, &store.Charge{AmountNanoUSD: 300, Category: "turn", Model: "m"},
		func(after int64) []store.NewEvent {
			return []store.NewEvent{{Type: "spend.recorded", Data: map[string]int64{"balance": after}}, {Type: "turn.completed", Data: nil}}
		})
	require.NoError(t, err)
	require.Equal(t, int64(700), balance)
	require.Len(t, events, 2)

	stored, err := s.EventsAfter(ctx, w.ID, 0, 10)
	require.NoError(t, err)
	require.Len(t, stored, 2)
	require.Equal(t, []int64{1, 2}, []int64{stored[0].Seq, stored[1].Seq})
	require.JSONEq(t, string(events[0].Envelope), string(stored[0].Envelope))
	cursors, err := s.EventCursors(ctx, []uuid.UUID{w.ID})
	require.NoError(t, err)
	require.Equal(t, int64(2), cursors[w.ID])
}
