package store_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	applied, err := store.Migrate(context.Background(), s.Pool())
	require.NoError(t, err)
	require.Empty(t, applied, "the template is already migrated")
}

func TestMigrateFreshDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyPool(t)

	applied, err := store.Migrate(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, allVersions(t), applied)
	_, err = store.New(pool).CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)
}

// TestMigrateConcurrently: replicas starting together on an empty database migrate it once
// between them (goose's lock, and the same lock around River's migrations).
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyPool(t)

	const replicas = 3
	results := make(chan []int, replicas)
	errs := make(chan error, replicas)
	for range replicas {
		go func() {
			applied, err := store.Migrate(ctx, pool)
			results <- applied
			errs <- err
		}()
	}
	var all []int
	for range replicas {
		require.NoError(t, <-errs)
		all = append(all, <-results...)
	}
	slices.Sort(all)
	require.Equal(t, allVersions(t), all, "each migration applied exactly once")
}

// TestMigrateAdoptsLegacyRunner: a database migrated by the runner before goose records its
// versions in schema_migrations only. Migrate must not run those again (their CREATE TABLEs
// would fail), only the ones after them.
func TestMigrateAdoptsLegacyRunner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyPool(t)
	versions := allVersions(t)
	legacyMigrate(t, pool, versions[:3])

	applied, err := store.Migrate(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, versions[3:], applied)

	applied, err = store.Migrate(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, applied)
	var legacyRows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&legacyRows))
	require.Equal(t, 3, legacyRows, "the old record stays as it was")
}

// TestMigrateRebuildsAnInterruptedConcurrentIndex: a concurrent index build that failed
// leaves an invalid index under its name, and goose does not record the file. Migrating
// again runs the file again, which replaces the invalid index with a valid one (0042).
func TestMigrateRebuildsAnInterruptedConcurrentIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := emptyPool(t)
	require.NoError(t, store.MigrateTo(ctx, pool, 41))
	s := store.New(pool)
	w, err := s.CreateWorkspace(ctx, "w", 0)
	require.NoError(t, err)
	for range 2 {
		_, err = s.CreateConversation(ctx, w.ID, "api")
		require.NoError(t, err)
	}
	// A failed build under the name 0042 gives its first index: unique over two conversations
	// of one workspace.
	_, err = pool.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY conversations_assignee_idx ON conversations (workspace_id)`)
	require.Error(t, err)

	applied, err := store.Migrate(ctx, pool)
	require.NoError(t, err)
	all := allVersions(t)
	require.Equal(t, all[slices.Index(all, 42):], applied)
	var def string
	var valid bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_get_indexdef(i.indexrelid), i.indisvalid FROM pg_index i
		WHERE i.indexrelid = 'conversations_assignee_idx'::regclass`).Scan(&def, &valid))
	require.True(t, valid)
	require.Contains(t, def, "(assignee_user_id) WHERE (assignee_user_id IS NOT NULL)")
}

func emptyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), storetest.NewEmptyURL(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// allVersions lists the embedded migrations' versions, from their file names.
func allVersions(t *testing.T) []int {
	names, err := fs.Glob(store.Migrations(), "migrations/*.sql")
	require.NoError(t, err)
	out := make([]int, len(names))
	for i, n := range names {
		_, err := fmt.Sscanf(n, "migrations/%d_", &out[i])
		require.NoError(t, err)
	}
	return out
}

// legacyMigrate does what the runner before goose did: each migration file in a transaction,
// recorded in schema_migrations(version, name, applied_at).
func legacyMigrate(t *testing.T, pool *pgxpool.Pool, versions []int) {
	ctx := context.Background()
	_, err := pool.Exec(ctx, `CREATE TABLE schema_migrations (
		version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	for _, v := range versions {
		names, err := fs.Glob(store.Migrations(), fmt.Sprintf("migrations/%04d_*.sql", v))
		require.NoError(t, err)
		require.Len(t, names, 1)
		body, err := fs.ReadFile(store.Migrations(), names[0])
		require.NoError(t, err)
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, string(body))
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v, names[0])
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
	}
}

// Migration 0007 reduces the raw dial errors of attempts recorded before failures were
// classified to their class, so the attempt log shows no address or port.
func TestMigrationClassifiesOldAttemptErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	ws, err := s.CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)
	ep, err := s.CreateWebhookEndpoint(ctx, store.WebhookEndpoint{WorkspaceID: ws.ID, ShortID: "whe-old",
		URL: "https://example.com/hook", EventTypes: []string{"*"}, Enabled: true, Secret: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"})
	require.NoError(t, err)
	old := map[string]string{
		"the receiver answered 500":                                                        "http_status",
		"dial tcp [::1]:34433: connect: connection refused":                                "connection_refused",
		"read tcp [::1]:51786->[::1]:34433: read: connection reset by peer":                "connection_error",
		"Post \"https://h.invalid/\": dial tcp: lookup h.invalid: no such host":            "dns_error",
		"tls: failed to verify certificate: x509: certificate signed by unknown authority": "tls_error",
		"context deadline exceeded (Client.Timeout exceeded while awaiting headers)":       "timeout",
		"address not allowed: 127.0.0.1 is a loopback address":                             "blocked_address",
		"timeout": "timeout", // already a class: unchanged
	}
	for text := range old {
		_, err := s.Pool().Exec(ctx, `INSERT INTO webhook_attempts (workspace_id, endpoint_id, event_id, event_type, attempt, succeeded, duration_ms, error)
			VALUES ($1, $2, 'evt_x', 'turn.completed', 1, false, 5, $3)`, ws.ID, ep.ID, text)
		require.NoError(t, err)
	}
	migration, err := fs.ReadFile(store.Migrations(), "migrations/0007_webhook_attempt_classes.sql")
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, string(migration)) // rerun on the rows written "before" it
	require.NoError(t, err)
	rows, err := s.Pool().Query(ctx, `SELECT error FROM webhook_attempts WHERE endpoint_id = $1`, ep.ID)
	require.NoError(t, err)
	classes := map[string]int{}
	for rows.Next() {
		var class string
		require.NoError(t, rows.Scan(&class))
		classes[class]++
	}
	require.NoError(t, rows.Err())
	want := map[string]int{}
	for _, class := range old {
		want[class]++
	}
	require.Equal(t, want, classes)
}

// TestTurnValuesAreCompressedWithLZ4: a tool result over PostgreSQL's 2 kB threshold is
// stored with lz4 (migration 0037), on a server built with it, as this project's are.
func TestTurnValuesAreCompressedWithLZ4(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	var lz4 bool
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'default_toast_compression'`).Scan(&lz4))
	if !lz4 {
		t.Skip("this PostgreSQL was built without lz4; the migration keeps pglz")
	}
	ws, err := s.CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)
	conv, err := s.CreateConversation(ctx, ws.ID, "api")
	require.NoError(t, err)
	big := fmt.Sprintf(`[{"call_id":"c1","name":"search","content":%q}]`, strings.Repeat("passage about sunday opening hours ", 200))
	require.NoError(t, s.AppendMessages(ctx, ws.ID, conv.ID, []store.Message{{Role: "tool", ToolResults: []byte(big)}}))
	var method string
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT pg_column_compression(tool_results) FROM messages WHERE conversation_id = $1`, conv.ID).Scan(&method))
	require.Equal(t, "lz4", method)
}

// TestAToolResultThatCompressesSmallStaysInItsRow: a 5 kB knowledge search result, lz4
// compressed under toast_tuple_target (migration 0038), is kept in the messages row rather
// than the TOAST table, and its stored size is the one the history window counted before.
func TestAToolResultThatCompressesSmallStaysInItsRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	ws, err := s.CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)
	conv, err := s.CreateConversation(ctx, ws.ID, "api")
	require.NoError(t, err)
	// Passages that lz4 takes to about half: over 2 kB compressed, so out of line at the default.
	var passages strings.Builder
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		fmt.Fprintf(&passages, "%016x%016x%016x the shop opens on sunday at nine and closes at five ", rng.Uint64(), rng.Uint64(), rng.Uint64())
	}
	result := fmt.Sprintf(`[{"call_id":"c1","name":"search","content":%q}]`, passages.String())
	require.Greater(t, len(result), 4080)
	require.NoError(t, s.AppendMessages(ctx, ws.ID, conv.ID, []store.Message{{Role: "tool", ToolResults: []byte(result)}}))
	var toastBytes int64 // the TOAST table's size: it has no page until a value goes there
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'messages'::regclass`).Scan(&toastBytes))
	require.Zero(t, toastBytes, "the tool result went to the TOAST table")
	var stored, counted int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT bytes, octet_length(content) + coalesce(octet_length(tool_calls::text), 0) + coalesce(octet_length(tool_results::text), 0)
		FROM messages WHERE conversation_id = $1`, conv.ID).Scan(&stored, &counted))
	require.Equal(t, counted, stored)
}
