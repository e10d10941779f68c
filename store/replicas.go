package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Replica liveness: each serving process holds a session-level advisory lock named by its job
// queue client id, on a connection of its own, for as long as it lives. PostgreSQL releases
// the lock the moment that connection drops, which a killed process's does at once: a
// running job whose runner's lock is gone belongs to a dead replica. The statements below
// read and write River's table (not in the schema sqlc reads), by hand as in migrate.go.

// replicaLockClass is the first key of the replica locks (the second is hashtext(client id)).
const replicaLockClass = 730_194_652

// ReplicaLock is the held liveness lock of this process.
type ReplicaLock struct{ conn *pgx.Conn }

// HoldReplicaLock takes this process's liveness lock on a connection outside the pool (the
// pool's size stays what the operator set).
func (s *Store) HoldReplicaLock(ctx context.Context, replicaID string) (*ReplicaLock, error) {
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = s.ConnName("replica lock")
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("replica lock: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1::int4, hashtext($2))`, replicaLockClass, replicaID).Scan(&ok); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("replica lock: %w", err)
	}
	if !ok {
		conn.Close(ctx)
		return nil, fmt.Errorf("replica lock: another process holds the id %q", replicaID)
	}
	return &ReplicaLock{conn: conn}, nil
}

// Alive reports whether the lock's connection still answers (the lock is then still held).
func (l *ReplicaLock) Alive(ctx context.Context) bool { return l.conn.Ping(ctx) == nil }

// Release drops the lock (closing its connection).
func (l *ReplicaLock) Release(ctx context.Context) { _ = l.conn.Close(ctx) }

// RescueOrphanedJobs makes available again the running jobs of the given kinds whose runner
// holds no liveness lock any more (its process died), each at most once (a rescued job is
// marked in its metadata), and returns how many. A job must have run for at least minAge,
// so a runner that has only just started cannot be mistaken for a dead one.
func (s *Store) RescueOrphanedJobs(ctx context.Context, kinds []string, minAge time.Duration) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
UPDATE river_job j
SET state = 'available',
    scheduled_at = now(),
    metadata = j.metadata || jsonb_build_object('rescued_from', j.attempted_by[cardinality(j.attempted_by)]),
    errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', j.attempt,
        'error', 'the replica running this job died (' || j.attempted_by[cardinality(j.attempted_by)] || '); rescued to run again', 'trace', ''))
WHERE j.state = 'running'
  AND j.kind = ANY($1::text[])
  AND j.attempted_at < now() - $2::interval
  AND cardinality(j.attempted_by) > 0
  AND NOT j.metadata ? 'rescued_from'
  AND NOT EXISTS (
    SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted
      AND l.classid = $3::int4::oid AND l.objsubid = 2
      AND l.objid = hashtext(j.attempted_by[cardinality(j.attempted_by)])::oid)`,
		kinds, minAge, replicaLockClass)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
