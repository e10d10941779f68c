package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strings"
	"time"

	"switchboard/channels"
	"switchboard/events"
	"switchboard/responses"
	"switchboard/store"
	"switchboard/workflows"
)

// Losing a replica loses no work. River rescues a stuck job only once the job's own time-out
// has passed (a background turn's is RESPONSE_TTL, 15 minutes), which is far too late for a
// user waiting on a turn whose replica was killed. So every replica holds a liveness lock
// in PostgreSQL (store.HoldReplicaLock, named by its job client's id) and every replica
// looks, every rescueInterval, for running jobs whose runner's lock is gone: PostgreSQL
// drops a dead process's lock as soon as its connection closes, so such a job is requeued
// within seconds and run again by a live replica, at most once more (the exactly-once commit
// of a turn makes the rerun safe: a turn that did commit is not charged twice).

// rescueInterval is how often a replica looks for a dead replica's jobs; with the job
// queue's fetch poll (1 s) a dead replica's turn restarts within a few seconds.
const rescueInterval = 3 * time.Second

// rescuedKinds are the jobs rerun when their replica dies: background turns and webhook
// deliveries (at least once by contract), and replies to inbound messages and people's
// replies (each is claimed before it is sent, so a rerun never sends it twice), and workflow
// runs (each step's result is recorded before the next starts, so a rerun resumes at the
// step, with the step's idempotency key). Crawls wait for River's own rescue.
var rescuedKinds = []string{responses.BackgroundArgs{}.Kind(), events.DeliveryArgs{}.Kind(), channels.ReplyArgs{}.Kind(), channels.SendArgs{}.Kind(),
	workflows.RunArgs{}.Kind()}

// newReplicaID names this process in the job queue and its liveness lock: host, start time
// and randomness, so that two processes never share one.
func newReplicaID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, host)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return host + "_" + time.Now().UTC().Format("20060102T150405") + "_" + hex.EncodeToString(b)
}

// watchReplicas keeps this replica's liveness lock (taking it again if its connection was
// lost) and requeues the jobs of dead replicas, until ctx ends.
func watchReplicas(ctx context.Context, st *store.Store, id string, lock *store.ReplicaLock, log *slog.Logger) {
	defer func() {
		if lock != nil {
			lock.Release(context.Background())
		}
	}()
	t := time.NewTicker(rescueInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if lock == nil || !lock.Alive(ctx) {
			if lock != nil {
				lock.Release(ctx)
				lock = nil
			}
			var err error
			if lock, err = st.HoldReplicaLock(ctx, id); err != nil {
				// Without the lock, another replica may rerun our turns: safe (exactly-once
				// commit), only wasteful. Say so and keep trying.
				log.Warn("replica liveness lock lost; retrying", slog.String("error", err.Error()))
				lock = nil
			}
		}
		n, err := st.RescueOrphanedJobs(ctx, rescuedKinds, time.Second)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("looking for the jobs of dead replicas", slog.String("error", err.Error()))
			}
			continue
		}
		if n > 0 {
			log.Warn("requeued the running jobs of a replica that died", slog.Int64("jobs", n))
		}
	}
}
