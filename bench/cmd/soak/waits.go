package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// waitSampler reads pg_stat_activity every -wait-sample and writes, per sample, what each
// active session of the bench database was doing (its wait event, or running, and the sqlc
// name of its statement) and what PostgreSQL's own processes were doing (autovacuum, the
// checkpointer, the WAL writer), to waits.csv in dir: a stall in the per-second figures can
// then be read against what the database was waiting on at that moment.
func waitSampler(ctx context.Context, dbURL, dir string, begin time.Time, every time.Duration) (done <-chan struct{}) {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		if dir == "" || every <= 0 {
			return
		}
		f, err := os.Create(filepath.Join(dir, "waits.csv"))
		if err != nil {
			return
		}
		defer f.Close()
		w := csv.NewWriter(f)
		defer w.Flush()
		_ = w.Write([]string{"t", "backend", "wait", "statement", "sessions"})
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := conn.Query(ctx, `SELECT backend_type, coalesce(wait_event_type || ':' || wait_event, 'running'),
					coalesce(substring(query from '-- name: (\w+)'), left(regexp_replace(query, '\s+', ' ', 'g'), 40), ''), count(*)
				FROM pg_stat_activity
				WHERE pid <> pg_backend_pid() AND (backend_type <> 'client backend' OR (datname = current_database() AND state = 'active'))
				  AND (backend_type <> 'client backend' OR wait_event IS DISTINCT FROM 'ClientRead')
				  AND (backend_type = 'client backend' OR wait_event IS NULL OR wait_event_type <> 'Activity')
				GROUP BY 1, 2, 3`)
			if err != nil {
				continue
			}
			t := fmt.Sprintf("%.1f", time.Since(begin).Seconds())
			for rows.Next() {
				var backend, wait, stmt string
				var n int
				if rows.Scan(&backend, &wait, &stmt, &n) == nil {
					_ = w.Write([]string{t, backend, wait, stmt, fmt.Sprint(n)})
				}
			}
			rows.Close()
		}
	}()
	return ch
}
