package store

import (
	"context"
	"time"
)

// JobQueueStat is the work waiting in the job queue for one kind of job: jobs ready to run
// (available, or retryable/scheduled and due) and the age of the oldest of them, and jobs
// running now.
type JobQueueStat struct {
	Kind      string
	Waiting   int64
	Running   int64
	OldestAge time.Duration // of the oldest waiting job; zero when none waits
}

// JobQueueStats reads the queue's depth per kind, for metrics. River's table is not part of
// the schema sqlc reads, so the statement is written here by hand (as in migrate.go). It is
// an aggregate over the unfinished jobs only, which River's state index serves.
func (s *Store) JobQueueStats(ctx context.Context) ([]JobQueueStat, error) {
	rows, err := s.pool.Query(ctx, `
SELECT kind,
       count(*) FILTER (WHERE state <> 'running' AND scheduled_at <= now()),
       count(*) FILTER (WHERE state = 'running'),
       coalesce(extract(epoch FROM now() - min(scheduled_at) FILTER (WHERE state <> 'running' AND scheduled_at <= now())), 0)::float8
FROM river_job
WHERE state IN ('available', 'running', 'retryable', 'scheduled')
GROUP BY kind`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []JobQueueStat
	for rows.Next() {
		var st JobQueueStat
		var age float64
		if err := rows.Scan(&st.Kind, &st.Waiting, &st.Running, &age); err != nil {
			return nil, err
		}
		st.OldestAge = time.Duration(age * float64(time.Second))
		out = append(out, st)
	}
	return out, rows.Err()
}
