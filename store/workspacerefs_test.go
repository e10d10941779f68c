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

// Every table that names a workspace checks it once per statement (migrations 0019, 0020,
// 0035) instead of by a foreign key per row, without locking the workspace's row, since a
// workspace is never deleted: these tests hold them to what the foreign key did.

func requireFKViolation(t *testing.T, err error, constraint string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "want a PostgreSQL error, got %v", err)
	require.Equal(t, "23503", pgErr.Code, pgErr.Message)
	require.Equal(t, constraint, pgErr.ConstraintName)
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

// TestWorkspacesAreNeverDeleted: a workspace cannot be deleted, truncated or given another
// id, so a row that found its workspace keeps it without holding a lock on it; the refusal
// removes nothing.
func TestWorkspacesAreNeverDeleted(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "kept", 1000)
	require.NoError(t, err)
	settle(t, s, w.ID)
	for _, sql := range []string{`DELETE FROM workspaces WHERE id = $1`, `UPDATE workspaces SET id = gen_random_uuid() WHERE id = $1`} {
		_, err = s.Pool().Exec(ctx, sql, w.ID)
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: want a PostgreSQL error, got %v", sql, err)
		require.Equal(t, "23001", pgErr.Code, pgErr.Message)
		require.Contains(t, pgErr.Message, "a workspace is never deleted")
	}
	_, err = s.Pool().Exec(ctx, `TRUNCATE workspaces CASCADE`)
	require.Error(t, err, "TRUNCATE is refused too")
	_, err = s.Pool().Exec(ctx, `UPDATE workspaces SET name = 'renamed' WHERE id = $1`, w.ID)
	require.NoError(t, err, "other columns change freely")
	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM workspaces WHERE id = $1) + (SELECT count(*) FROM ledger WHERE workspace_id = $1)`, w.ID).Scan(&n))
	require.Equal(t, 2, n, "the workspace and its ledger row are there")
}

// TestNoTableLocksItsWorkspace: no foreign key to workspaces is left (a new one would lock the
// hottest row of the database FOR KEY SHARE with every insert), every table with a
// workspace_id checks it by the statement trigger (or through the row its workspace_id is a
// key of), and the trigger takes no lock: an open
// transaction that wrote a channel message leaves its workspace's row free to update
// without waiting, and its settlement needs no MultiXact.
func TestNoTableLocksItsWorkspace(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	var fks []string
	rows, err := s.Pool().Query(ctx, `SELECT conrelid::regclass::text || '.' || conname FROM pg_constraint WHERE contype = 'f' AND confrelid = 'workspaces'::regclass`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		fks = append(fks, name)
	}
	require.NoError(t, rows.Err())
	require.Empty(t, fks, "a foreign key to workspaces locks the workspace row with every insert: use the check_workspace_refs trigger (migration 0035)")

	var unchecked []string
	rows, err = s.Pool().Query(ctx, `SELECT c.relname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE a.attname = 'workspace_id' AND NOT a.attisdropped AND c.relkind = 'r' AND n.nspname = 'public'
		  AND NOT EXISTS (SELECT 1 FROM pg_trigger tg WHERE tg.tgrelid = c.oid AND tg.tgname = c.relname || '_workspace_ref')
		  -- a workspace_id that is part of a key of a checked row (event_dispatch's event)
		  AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'f' AND a.attnum = ANY (k.conkey))
		ORDER BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		unchecked = append(unchecked, name)
	}
	require.NoError(t, rows.Err())
	require.Empty(t, unchecked, "tables whose workspace_id nothing checks")

	w, err := s.CreateWorkspace(ctx, "hot", 1000)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `INSERT INTO channel_messages (workspace_id, direction, remote, local, body, segments, status) VALUES ($1, 'inbound', '+1', '+2', 'x', 1, 'received')`, uuid.New())
	requireFKViolation(t, err, "channel_messages_workspace_id_fkey")

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `INSERT INTO contacts (workspace_id, name) VALUES ($1, 'Ann')`, w.ID)
	require.NoError(t, err)
	var free bool
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE SKIP LOCKED)`, w.ID).Scan(&free))
	require.True(t, free, "the workspace row is not held by the open insert")
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
