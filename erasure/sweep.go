package erasure

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"switchboard/store"
)

// SweepInterval is how often the retention job runs.
const SweepInterval = 24 * time.Hour

// sweepBatch is the rows one transaction of the job deletes: small, so no lock is held for
// long and the job yields between batches.
const sweepBatch = 200

// SweepArgs is the daily retention job.
type SweepArgs struct{}

// Kind names the job.
func (SweepArgs) Kind() string { return "retention_sweep" }

// InsertOpts keeps one run queued at a time.
func (SweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}}}
}

// PeriodicJobs is the retention job, daily and at start.
func PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(SweepInterval),
		func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil }, &river.PeriodicJobOpts{ID: "retention_sweep", RunOnStart: true})}
}

// Sweeper works SweepArgs.
type Sweeper struct {
	river.WorkerDefaults[SweepArgs]
	store *store.Store
	log   *slog.Logger
}

// NewSweeper is the retention job's worker.
func NewSweeper(st *store.Store, log *slog.Logger) *Sweeper { return &Sweeper{store: st, log: log} }

// Work deletes everything past its retention, a batch per transaction.
func (w *Sweeper) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	swept, err := Sweep(ctx, w.store, sweepBatch)
	if swept.Conversations+swept.Uploads > 0 {
		w.log.InfoContext(ctx, "retention", slog.Int("conversations", swept.Conversations), slog.Int("events_tombstoned", swept.Events), slog.Int("uploads", swept.Uploads),
			slog.Int("events_indexed", swept.EventsIndexed))
	}
	return err
}

// Swept is what a sweep deleted.
type Swept struct {
	Conversations int
	Events        int // tombstoned
	Uploads       int
	EventsIndexed int // events whose mentions were recorded
}

// Sweep deletes the conversations and uploads past their retention, batch rows per
// transaction, until none is left, in each workspace where something can expire after
// recording the mentions of the events it appended since the last run (store.
// IndexEventMentions). It works through the workspaces one by one, each batch
// picking up in the workspace's index of activity where the previous one stopped, so a
// batch costs its own rows, not a read of every workspace's conversations.
func Sweep(ctx context.Context, st *store.Store, batch int) (Swept, error) {
	var out Swept
	scopes, err := st.RetentionScopes(ctx)
	if err != nil {
		return out, err
	}
	for _, scope := range scopes {
		// First the mentions of the events appended since the last run, so that the
		// batches' tombstones (and a day of contact erasures) look their events up instead
		// of matching the workspace's whole history.
		indexed, err := st.IndexEventMentions(ctx, scope.Workspace)
		out.EventsIndexed += indexed
		if err != nil {
			return out, err
		}
		for more := true; more; {
			e, err := expireBatch(ctx, st, scope, batch)
			if err != nil {
				return out, err
			}
			out.Conversations += e.Conversations
			out.Events += e.Events
			more = e.More
		}
	}
	for {
		n, err := st.DeleteExpiredUploads(ctx, batch)
		if err != nil {
			return out, err
		}
		out.Uploads += n
		if n < batch {
			return out, nil
		}
	}
}

// expireBatch is store.ExpireConversations, run again (up to eraseAttempts times in all) if
// PostgreSQL aborts it to break a deadlock. The batch locks its conversations, then the
// workspace's row; a writer that charges the workspace for one of those conversations
// (a failed turn's metering, a workflow's step) takes the workspace's row first and then
// the conversation's KEY SHARE, the other way round. An aborted batch changed nothing and
// kept the scope's place, so running it again is the same batch.
func expireBatch(ctx context.Context, st *store.Store, scope *store.RetentionScope, batch int) (e store.Expired, err error) {
	err = againIfDeadlocked(func() error {
		e, err = st.ExpireConversations(ctx, scope, batch)
		return err
	})
	return e, err
}
