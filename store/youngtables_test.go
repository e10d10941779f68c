package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/store/storetest"
)

// TestAnalyzeYoungTablesAnalyzesWhatGrew: a table that autovacuum never analyzed is analyzed
// once it has 50 new rows, and again only after it grew by a fifth; tables that did not grow
// are left alone.
func TestAnalyzeYoungTablesAnalyzesWhatGrew(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "w", 1000)
	require.NoError(t, err)
	// Autovacuum visits the test cluster's many databases often: here it must not analyze
	// the table first.
	_, err = s.Pool().Exec(ctx, `ALTER TABLE contacts SET (autovacuum_enabled = false)`)
	require.NoError(t, err)
	insert := func(n int) {
		t.Helper()
		conn, err := s.Pool().Acquire(ctx)
		require.NoError(t, err)
		defer conn.Release()
		_, err = conn.Exec(ctx, `INSERT INTO contacts (workspace_id, name) SELECT $1, 'c' || g FROM generate_series(1, $2) g`, w.ID, n)
		require.NoError(t, err)
		// The statistics counters are flushed when the session goes idle, at most once a second.
		_, err = conn.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
		require.NoError(t, err)
	}
	analyzed := func() []string {
		t.Helper()
		tables, err := s.AnalyzeYoungTables(ctx)
		require.NoError(t, err)
		return tables
	}

	// analyzedSoon: the statistics counters reach pg_stat_user_tables within a second.
	analyzedSoon := func(msg string) {
		t.Helper()
		require.Eventually(t, func() bool { return slices.Contains(analyzed(), "contacts") }, 5*time.Second, 100*time.Millisecond, msg)
	}

	insert(40)
	require.NotContains(t, analyzed(), "contacts", "40 rows: not yet")
	insert(20)
	analyzedSoon("60 rows: analyzed")
	var tuples float64
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE relname = 'contacts'`).Scan(&tuples))
	require.EqualValues(t, 60, tuples, "the planner now knows the table's size")
	require.NotContains(t, analyzed(), "contacts", "nothing new since")
	insert(55) // under a fifth of 60 is 12, but 50 rows at least
	analyzedSoon("grown by more than a fifth and 50 rows: analyzed again")

	// Analyzed once past 1,000 rows, then left to autovacuum however much it grows.
	insert(1_000)
	analyzedSoon("1,000 rows more: analyzed")
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE relname = 'contacts'`).Scan(&tuples))
	require.GreaterOrEqual(t, tuples, float64(1_000))
	insert(5_000) // four times more
	require.Eventually(t, func() bool {
		var pending int
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = 'contacts'`).Scan(&pending))
		return pending >= 5_000
	}, 5*time.Second, 100*time.Millisecond, "the growth is counted")
	require.NotContains(t, analyzed(), "contacts", "past 1,000 rows: autovacuum's")
}
