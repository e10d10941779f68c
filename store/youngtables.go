package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// AnalyzeYoungTables runs ANALYZE on the tables autovacuum has not analyzed yet that grew by
// a fifth (and at least 50 rows) since their last ANALYZE, and returns their names.
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
func (s *Store) AnalyzeYoungTables(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT relname FROM pg_stat_user_tables
		WHERE schemaname = current_schema() AND last_autoanalyze IS NULL
		  AND n_mod_since_analyze >= greatest(50, 0.2 * coalesce(nullif((SELECT reltuples FROM pg_class WHERE oid = relid), -1), 0))
		ORDER BY relname`)
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
