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

// The events, ledger, conversations, messages and responses tables check their workspace once
// per statement (migrations 0019, 0020) instead of by a foreign key per row: these tests hold
// them to what the foreign key did.

func requireFKViolation(t *testing.T, err error, constraint string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "want a PostgreSQL error, got %v", err)
	require.Equal(t, "23503", pgErr.Code, pgErr.Message)
	require.Equal(t, constraint, pgErr.ConstraintName)
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

// TestWorkspaceRefsRejectAnUnknownWorkspace: a statement naming a workspace that does not
// exist fails whole, even among rows of one that does, and writes nothing.
func TestWorkspaceRefsRejectAnUnknownWorkspace(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "known", 1000)
	require.NoError(t, err)
	ghost := uuid.New()

	_, err = s.Pool().Exec(ctx, `INSERT INTO events (workspace_id, seq, short_id, type, envelope)
		VALUES ($1, 1, 'evt_known1', 't', '{}'), ($2, 1, 'evt_ghost1', 't', '{}')`, w.ID, ghost)
	requireFKViolation(t, err, "events_workspace_id_fkey")
	_, err = s.Pool().Exec(ctx, `INSERT INTO ledger (workspace_id, amount_nano_usd, balance_after, category)
		SELECT unnest($1::uuid[]), -1, 0, 'model_usage'`, []uuid.UUID{w.ID, ghost, w.ID})
	requireFKViolation(t, err, "ledger_workspace_id_fkey")
	_, err = s.Pool().Exec(ctx, `INSERT INTO conversations (workspace_id, short_id, channel) VALUES ($1, 'mc-ghost', 'api')`, ghost)
	requireFKViolation(t, err, "conversations_workspace_id_fkey")
	conv, err := s.CreateConversation(ctx, w.ID, "api")
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `INSERT INTO messages (workspace_id, conversation_id, seq, role, content) VALUES ($1, $2, 1, 'user', 'hi')`, ghost, conv.ID)
	requireFKViolation(t, err, "messages_workspace_id_fkey")
	_, err = s.Pool().Exec(ctx, `INSERT INTO responses (workspace_id, short_id, conversation_id, status, model, body) VALUES ($1, 'resp_ghost', $2, 'completed', 'm', '{}')`, ghost, conv.ID)
	requireFKViolation(t, err, "responses_workspace_id_fkey")

	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM ledger) + (SELECT count(*) FROM messages) + (SELECT count(*) FROM responses)`).Scan(&n))
	require.Zero(t, n, "nothing written")

	// Settling a workspace that does not exist fails as before, and writes nothing either.
	err = s.InTx(ctx, func(tx *store.Tx) error {
		return tx.SettleMany(ctx, ghost, oneCharge())
	})
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.Pool().Exec(ctx, `UPDATE events SET workspace_id = $1`, ghost)
	require.NoError(t, err, "no rows, nothing to refuse")
}

// TestWorkspaceRefsCannotMoveARow: a row's workspace never changes.
func TestWorkspaceRefsCannotMoveARow(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	a, err := s.CreateWorkspace(ctx, "a", 1000)
	require.NoError(t, err)
	b, err := s.CreateWorkspace(ctx, "b", 1000)
	require.NoError(t, err)
	settle(t, s, a.ID)
	_, err = s.Pool().Exec(ctx, `UPDATE events SET workspace_id = $1 WHERE workspace_id = $2`, b.ID, a.ID)
	requireFKViolation(t, err, "events_workspace_id_fkey")
	_, err = s.Pool().Exec(ctx, `UPDATE ledger SET workspace_id = $1 WHERE workspace_id = $2`, b.ID, a.ID)
	requireFKViolation(t, err, "ledger_workspace_id_fkey")
	_, err = s.Pool().Exec(ctx, `UPDATE ledger SET category = category WHERE workspace_id = $1`, a.ID)
	require.NoError(t, err, "other columns change freely")
	conv, err := s.CreateConversation(ctx, a.ID, "api")
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE conversations SET workspace_id = $1 WHERE id = $2`, b.ID, conv.ID)
	requireFKViolation(t, err, "conversations_workspace_id_fkey")
}

// TestWorkspaceRefsHoldTheWorkspaceAndCascade: an open transaction that wrote a workspace's
// events holds the workspace against deletion (FOR KEY SHARE, as the foreign key did); once
// it commits, deleting the workspace deletes its events and ledger rows, and no one else's.
func TestWorkspaceRefsHoldTheWorkspaceAndCascade(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	gone, err := s.CreateWorkspace(ctx, "gone", 1000)
	require.NoError(t, err)
	kept, err := s.CreateWorkspace(ctx, "kept", 1000)
	require.NoError(t, err)
	settle(t, s, kept.ID)

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `INSERT INTO events (workspace_id, seq, short_id, type, envelope) VALUES ($1, 1, 'evt_held', 't', '{}')`, gone.ID)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO ledger (workspace_id, amount_nano_usd, balance_after, category) VALUES ($1, -1, 999, 'model_usage')`, gone.ID)
	require.NoError(t, err)

	requireDeletionWaits(t, s, `DELETE FROM workspaces WHERE id = $1`, gone.ID)

	require.NoError(t, tx.Commit(ctx))
	for _, ws := range []uuid.UUID{gone.ID, kept.ID} {
		conv, err := s.CreateConversation(ctx, ws, "api")
		require.NoError(t, err)
		require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.AppendMessages(ctx, ws, conv.ID, []store.Message{{Role: "user", Content: "hi"}}); err != nil {
				return err
			}
			return tx.InsertResponse(ctx, ws, store.StoredResponse{ShortID: "resp_" + ws.String()[:8], ConversationID: &conv.ID, Status: "completed", Model: "m", Body: []byte("{}")})
		}))
	}
	tag, err := s.Pool().Exec(ctx, `DELETE FROM workspaces WHERE id = $1`, gone.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	count := func(ws uuid.UUID) (n int) {
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM events WHERE workspace_id = $1) + (SELECT count(*) FROM ledger WHERE workspace_id = $1)
			+ (SELECT count(*) FROM conversations WHERE workspace_id = $1) + (SELECT count(*) FROM messages WHERE workspace_id = $1)
			+ (SELECT count(*) FROM responses WHERE workspace_id = $1)`, ws).Scan(&n))
		return n
	}
	require.Zero(t, count(gone.ID), "the deleted workspace's rows went with it")
	require.Equal(t, 5, count(kept.ID), "the other workspace keeps its event, ledger row, conversation, message and response")
}

// oneCharge is a settlement of one charge and its spend.recorded event.
func oneCharge() []store.Settlement {
	return []store.Settlement{{Charge: &store.Charge{AmountNanoUSD: 5, Category: "model_usage", Model: "m"},
		Events: []store.NewEvent{{Type: "spend.recorded", Data: map[string]any{}}}}}
}

// settle commits one charge and its event for ws.
func settle(t *testing.T, s *store.Store, ws uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
		return tx.SettleMany(ctx, ws, oneCharge())
	}))
}
