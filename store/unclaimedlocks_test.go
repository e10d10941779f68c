package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/shortid"
	"switchboard/store"
	"switchboard/store/storetest"
)

// TestTheUnclaimedSweepSkipsAConversationBeingWritten: the sweep that emails about escalated
// conversations nobody took marks them in one statement across workspaces. A conversation a
// transaction holds (a turn appending to it, a person taking it over, an erasure) is skipped,
// not waited for: the sweep locks in id order and holds nothing while waiting, so it cannot
// deadlock with the writers of several conversations, and the next sweep marks the skipped
// one. (It used to lock in its scan's order and wait.)
func TestTheUnclaimedSweepSkipsAConversationBeingWritten(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	w, err := st.CreateWorkspace(ctx, "sweep-locks", 0)
	require.NoError(t, err)
	waiting := func() uuid.UUID {
		var id uuid.UUID
		require.NoError(t, st.Pool().QueryRow(ctx, `INSERT INTO conversations (workspace_id, short_id, channel, status, escalated_at)
			VALUES ($1, $2, 'webchat', 'escalated', now() - interval '1 hour') RETURNING id`, w.ID, shortid.New(shortid.Conversation)).Scan(&id))
		return id
	}
	held, free := waiting(), waiting()

	writer, err := st.Pool().Begin(ctx) // a turn appending to held
	require.NoError(t, err)
	defer func() { _ = writer.Rollback(ctx) }()
	_, err = writer.Exec(ctx, `UPDATE conversations SET message_seq = message_seq + 1, updated_at = now() WHERE id = $1`, held)
	require.NoError(t, err)

	var first []uuid.UUID
	done, sweepErr := storetest.InBackground(func(ctx context.Context) error {
		return st.InTx(ctx, func(tx *store.Tx) error {
			got, err := tx.ClaimUnclaimedNotices(ctx, time.Now())
			for _, c := range got {
				first = append(first, c.ID)
			}
			return err
		})
	})
	storetest.WaitBlockedOrDone(t, st, done)
	select {
	case <-done:
	default:
		t.Fatal("the sweep waits for the conversation the writer holds")
	}
	require.NoError(t, *sweepErr)
	require.Equal(t, []uuid.UUID{free}, first, "the free one is marked, the held one skipped")

	require.NoError(t, writer.Commit(ctx))
	var second []uuid.UUID
	require.NoError(t, st.InTx(ctx, func(tx *store.Tx) error {
		got, err := tx.ClaimUnclaimedNotices(ctx, time.Now())
		for _, c := range got {
			second = append(second, c.ID)
		}
		return err
	}))
	require.Equal(t, []uuid.UUID{held}, second, "the next sweep marks the one skipped, once")
}
