package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// AnalyzeYoungTables runs ANALYZE on the tables autovacuum has not analyzed yet that grew by
// a fifth (and at least 50 rows) since their last ANALYZE, as long as that ANALYZE saw fewer
// than youngRows rows, and returns their names.
//
// Why: pgx prepares each statement once per connection, and after five executions
// PostgreSQL keeps a generic plan for it. Made while a table has no statistics, that plan can
// read a row by the workspace's index and filter on the primary key instead of looking the
// key up (66 of the store's reads on a new database; docs/benchmarks.md, "Two-way SMS under
// load", 2026-12-01): every lookup then walks the workspace's rows. A plan is made again
// when its table is analyzed, which autovacuum does at most once a minute (its naptime), so
// a new database's first minute of traffic ran on such plans. Analyzing the young tables as
// they grow replans them within seconds; once autovacuum has analyzed a table it keeps its
// statistics current, and this leaves it alone.
//
// Why youngRows: the plans at stake are settled once a table's statistics describe a few
// hundred rows (any ANALYZE of a small table makes the primary key win), and ANALYZE reads
// up to 30,000 of them (300 times the statistics target): in the agents benchmark, a new
// database's events table kept being analyzed at every fifth of growth, 0.55 s of
// PostgreSQL's CPU each time past 100,000 rows, 0.4-1.4 s of each 5 s round in all; with
// 10,000 as the bound, the tables still under it took 0.5 s of the stored route's first
// round (docs/benchmarks.md, 2026-12-03). Past youngRows, autovacuum's own threshold (a
// tenth, within its naptime) keeps the statistics current.
func (s *Store) AnalyzeYoungTables(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT relname FROM pg_stat_user_tables
		WHERE schemaname = current_schema() AND last_autoanalyze IS NULL
		  AND n_mod_since_analyze >= greatest(50, 0.2 * coalesce(nullif((SELECT reltuples FROM pg_class WHERE oid = relid), -1), 0))
		  AND coalesce((SELECT reltuples FROM pg_class WHERE oid = relid), -1) < $1
		ORDER BY relname`, youngRows)
	if err != nil {
		return nil, err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		// SKIP_LOCKED: another replica analyzing it, or a migration, is as good.
		if _, err := s.pool.Exec(ctx, "ANALYZE (SKIP_LOCKED) "+pgx.Identifier{t}.Sanitize()); err != nil {
			return nil, err
		}
	}
	return tables, nil
}

// youngRows is the size past which a table is autovacuum's alone (AnalyzeYoungTables).
const youngRows = 1000

// RunYoungTableAnalyzer calls AnalyzeYoungTables every interval for the first span of the
// process, until ctx ends: a database that has carried traffic for that long has been
// analyzed by autovacuum. A failure is logged and tried again at the next tick.
func (s *Store) RunYoungTableAnalyzer(ctx context.Context, interval, span time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	end := time.After(span)
	for {
		select {
		case <-ctx.Done():
			return
		case <-end:
			return
		case <-t.C:
		}
		tables, err := s.AnalyzeYoungTables(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn("analyzing young tables", slog.String("error", err.Error()))
		}
		if len(tables) > 0 {
			log.Debug("analyzed young tables", slog.Any("tables", tables))
		}
	}
}
