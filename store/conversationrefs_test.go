package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// Messages, responses and ledger rows check their conversation once per statement (migration
// 0021) instead of by a foreign key per row: these tests hold them to what the foreign keys
// did.

// TestConversationRefsRejectAnUnknownConversation: a statement naming a conversation that
// does not exist fails whole, even among rows of one that does, and writes nothing; so does
// an update that points a row at one.
func TestConversationRefsRejectAnUnknownConversation(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "w", 1000)
	require.NoError(t, err)
	conv, err := s.CreateConversation(ctx, w.ID, "api")
	require.NoError(t, err)
	ghost := uuid.New()

	_, err = s.Pool().Exec(ctx, `INSERT INTO messages (workspace_id, conversation_id, seq, role, content)
		VALUES ($1, $2, 1, 'user', 'hi'), ($1, $3, 1, 'user', 'hi')`, w.ID, conv.ID, ghost)
	requireFKViolation(t, err, "messages_conversation_id_fkey")
	_, err = s.Pool().Exec(ctx, `INSERT INTO responses (workspace_id, short_id, conversation_id, status, model, body)
		VALUES ($1, 'resp_ghost', $2, 'completed', 'm', '{}')`, w.ID, ghost)
	requireFKViolation(t, err, "responses_conversation_id_fkey")
	_, err = s.Pool().Exec(ctx, `INSERT INTO ledger (workspace_id, amount_nano_usd, balance_after, category, conversation_id)
		SELECT $1, -1, 0, 'model_usage', unnest($2::uuid[])`, w.ID, []uuid.UUID{conv.ID, ghost})
	requireFKViolation(t, err, "ledger_conversation_id_fkey")

	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM ledger) + (SELECT count(*) FROM messages) + (SELECT count(*) FROM responses)`).Scan(&n))
	require.Zero(t, n, "nothing written")

	_, err = s.Pool().Exec(ctx, `INSERT INTO ledger (workspace_id, amount_nano_usd, balance_after, category) VALUES ($1, -1, 0, 'model_usage')`, w.ID)
	require.NoError(t, err, "a ledger row without a conversation needs none")
	require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
		return tx.InsertResponse(ctx, w.ID, store.StoredResponse{ShortID: "resp_real", ConversationID: &conv.ID, Status: "completed", Model: "m", Body: []byte("{}")})
	}))
	_, err = s.Pool().Exec(ctx, `UPDATE responses SET conversation_id = $1 WHERE short_id = 'resp_real'`, ghost)
	requireFKViolation(t, err, "responses_conversation_id_fkey")
	_, err = s.Pool().Exec(ctx, `UPDATE responses SET status = 'completed' WHERE short_id = 'resp_real'`)
	require.NoError(t, err, "other columns change freely")
}

// requireDeletionWaits runs a deletion that an open writer's FOR KEY SHARE lock must hold up:
// with a short lock_timeout, it fails with lock_not_available, and is rolled back.
func requireDeletionWaits(t *testing.T, s *store.Store, query string, args ...any) {
	t.Helper()
	ctx := context.Background()
	del, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = del.Rollback(ctx) }()
	_, err = del.Exec(ctx, `SET LOCAL lock_timeout = '200ms'`)
	require.NoError(t, err)
	_, err = del.Exec(ctx, query, args...)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr) && pgErr.Code == "55P03", "the deletion waits for the writer's lock, got %v", err)
}

// TestConversationRefsHoldTheConversationAndCascade: an open transaction that wrote a
// conversation's message holds the conversation against deletion (FOR KEY SHARE, as the
// foreign key did); once it commits, deleting the conversation deletes its messages and
// responses and clears its ledger rows' conversation, and touches no other conversation's.
func TestConversationRefsHoldTheConversationAndCascade(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "w", 1000)
	require.NoError(t, err)
	gone, err := s.CreateConversation(ctx, w.ID, "api")
	require.NoError(t, err)
	kept, err := s.CreateConversation(ctx, w.ID, "api")
	require.NoError(t, err)

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `INSERT INTO messages (workspace_id, conversation_id, seq, role, content) VALUES ($1, $2, 1, 'user', 'held')`, w.ID, gone.ID)
	require.NoError(t, err)

	requireDeletionWaits(t, s, `DELETE FROM conversations WHERE id = $1`, gone.ID)
	require.NoError(t, tx.Commit(ctx))

	for i, conv := range []uuid.UUID{gone.ID, kept.ID} {
		require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.InsertResponse(ctx, w.ID, store.StoredResponse{ShortID: "resp_" + conv.String(), ConversationID: &conv, Status: "completed", Model: "m", Body: []byte("{}")}); err != nil {
				return err
			}
			_, err := tx.Pgx().Exec(ctx, `INSERT INTO ledger (workspace_id, amount_nano_usd, balance_after, category, conversation_id) VALUES ($1, -1, $2, 'model_usage', $3)`, w.ID, 999-i, conv)
			return err
		}))
	}
	_, err = s.Pool().Exec(ctx, `INSERT INTO messages (workspace_id, conversation_id, seq, role, content) VALUES ($1, $2, 1, 'user', 'kept')`, w.ID, kept.ID)
	require.NoError(t, err)

	tag, err := s.Pool().Exec(ctx, `DELETE FROM conversations WHERE id = $1`, gone.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	count := func(conv uuid.UUID) (n int) {
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM messages WHERE conversation_id = $1)
			+ (SELECT count(*) FROM responses WHERE conversation_id = $1) + (SELECT count(*) FROM ledger WHERE conversation_id = $1)`, conv).Scan(&n))
		return n
	}
	require.Zero(t, count(gone.ID), "the deleted conversation's messages and responses went with it, its ledger row forgot it")
	require.Equal(t, 3, count(kept.ID), "the other conversation keeps its message, response and ledger row")
	var ledger int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM ledger WHERE workspace_id = $1`, w.ID).Scan(&ledger))
	require.Equal(t, 2, ledger, "the ledger keeps the deleted conversation's charge")
}

// TestConversationRefsLockOnlyAChangedConversation: an update that keeps a row's
// conversation neither checks nor locks it, as the foreign key did not, so it cannot deadlock
// with a deletion of that conversation; an update that moves the row locks its new one.
func TestConversationRefsLockOnlyAChangedConversation(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "w", 1000)
	require.NoError(t, err)
	a, err := s.CreateConversation(ctx, w.ID, "api")
	require.NoError(t, err)
	b, err := s.CreateConversation(ctx, w.ID, "api")
	require.NoError(t, err)
	require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
		return tx.InsertResponse(ctx, w.ID, store.StoredResponse{ShortID: "resp_moved", ConversationID: &a.ID, Status: "in_progress", Model: "m", Body: []byte("{}")})
	}))
	// lockable reports whether another transaction could lock the conversation FOR UPDATE
	// now, which any FOR KEY SHARE lock forbids.
	lockable := func(id uuid.UUID) bool {
		other, err := s.Pool().Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = other.Rollback(ctx) }()
		_, err = other.Exec(ctx, `SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE NOWAIT`, id)
		return err == nil
	}

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `UPDATE responses SET status = 'completed', conversation_id = coalesce(NULL, conversation_id) WHERE short_id = 'resp_moved'`)
	require.NoError(t, err)
	require.True(t, lockable(a.ID), "the unchanged conversation is not locked")
	_, err = tx.Exec(ctx, `UPDATE responses SET conversation_id = $1 WHERE short_id = 'resp_moved'`, b.ID)
	require.NoError(t, err)
	require.False(t, lockable(b.ID), "the new conversation is held until the update commits")
}
