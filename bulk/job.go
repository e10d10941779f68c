package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"switchboard/store"
)

// BulkArgs is the durable job of one bulk action: its run record says what to do.
type BulkArgs struct {
	WorkspaceID uuid.UUID `json:"workspace_id"`
	RunID       uuid.UUID `json:"run_id"`
}

// Kind names the job type in the queue.
func (BulkArgs) Kind() string { return "bulk_action" }

// InsertOpts retries a run that failed midway; every batch is its own transaction and
// records its progress in it, so a retry goes on where the last committed batch ended.
func (BulkArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 5} }

// runSpec is what a run acts on: the tool's arguments, the cutoff its set was computed at,
// and the conversation it must leave alone.
type runSpec struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Cutoff    time.Time       `json:"cutoff"`
	Exclude   *uuid.UUID      `json:"exclude,omitempty"`
	// OlderThan is older_than resolved when the run began (an age moves with the clock).
	OlderThan *time.Time `json:"older_than,omitempty"`
}

// Worker works the bulk jobs.
type Worker struct {
	river.WorkerDefaults[BulkArgs]
	s *Service
}

// Worker returns the job's worker.
func (s *Service) Worker() *Worker { return &Worker{s: s} }

// Timeout bounds one attempt; a retry resumes it.
func (w *Worker) Timeout(*river.Job[BulkArgs]) time.Duration { return 30 * time.Minute }

// Work runs the batches of the run.
func (w *Worker) Work(ctx context.Context, job *river.Job[BulkArgs]) error {
	return w.s.work(ctx, job.Args.WorkspaceID, job.Args.RunID, job.Attempt >= job.MaxAttempts)
}

// work runs a run's batches, one transaction of at most BatchSize rows each, until a batch
// finds nothing left; last says that a failure is final (the run is marked failed).
func (s *Service) work(ctx context.Context, ws, id uuid.UUID, last bool) error {
	err := s.batches(ctx, ws, id)
	if err == nil {
		return s.store.FinishBulkRun(ctx, ws, id, "completed", "")
	}
	if errors.Is(err, errRunGone) {
		return river.JobCancel(err)
	}
	if last {
		if ferr := s.store.FinishBulkRun(context.WithoutCancel(ctx), ws, id, "failed", "the bulk action failed midway; the rows counted in affected were changed"); ferr != nil {
			s.log.ErrorContext(ctx, "marking a bulk run failed", "error", ferr.Error())
		}
	}
	return err
}

var errRunGone = errors.New("bulk run not found or finished")

func (s *Service) batches(ctx context.Context, ws, id uuid.UUID) error {
	run, err := s.store.BulkRunByID(ctx, ws, id)
	if errors.Is(err, store.ErrNotFound) {
		return errRunGone
	}
	if err != nil {
		return err
	}
	if run.Status != "running" {
		return nil
	}
	var spec runSpec
	if err := json.Unmarshal(run.Spec, &spec); err != nil {
		return fmt.Errorf("bulk run %s: spec: %w", run.ShortID, err)
	}
	var k *kind
	for _, c := range s.kinds() {
		if c.tool == spec.Tool {
			k = &c
			break
		}
	}
	if k == nil {
		return fmt.Errorf("bulk run %s: unknown tool %q", run.ShortID, spec.Tool)
	}
	in, err := decode(*k, spec.Arguments)
	if err != nil {
		return fmt.Errorf("bulk run %s: arguments: %w", run.ShortID, err)
	}
	in.set.Cutoff, in.set.ExcludeID = spec.Cutoff, spec.Exclude
	if spec.OlderThan != nil {
		in.set.OlderThan = spec.OlderThan
	}
	for {
		n := 0
		err := s.store.InTx(ctx, func(tx *store.Tx) error {
			began := time.Now()
			var err error
			if n, err = k.apply(ctx, tx, ws, in.set, s.BatchSize); err != nil || n == 0 {
				return err
			}
			return tx.BulkRunProgress(ctx, ws, id, n, time.Since(began))
		})
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}
