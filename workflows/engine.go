package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"switchboard/store"
)

// RunArgs is the job that works one run. It runs the run's steps one after another; a wait
// (or the backoff after a failed attempt) snoozes it until the run may go on.
type RunArgs struct {
	WorkspaceID uuid.UUID `json:"workspace_id"`
	RunID       uuid.UUID `json:"run_id"`
}

// Kind names the job.
func (RunArgs) Kind() string { return "workflow_run" }

// Queue is where run jobs wait: their own queue, so that long waits and slow receivers
// never hold up turns or webhook deliveries.
const Queue = "workflows"

// InsertOpts puts the job on the workflows queue. River's own retries (after a crash or an
// error of the database) resume the run at the step it stands at; one job per run lives at
// a time.
func (RunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}}}
}

// Worker works RunArgs.
type Worker struct {
	river.WorkerDefaults[RunArgs]
	s *Service
}

// Worker is the run job's worker.
func (s *Service) Worker() *Worker { return &Worker{s: s} }

// Timeout bounds one working of the job: steps run one after another, each bounded by its
// own time-out, and a wait gives the job back.
func (w *Worker) Timeout(*river.Job[RunArgs]) time.Duration { return 30 * time.Minute }

// Work advances the run until it ends or must wait.
func (w *Worker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	until, err := w.s.Advance(ctx, job.Args.WorkspaceID, job.Args.RunID)
	if err != nil {
		return err
	}
	if !until.IsZero() {
		return river.JobSnooze(max(until.Sub(w.s.cfg.Now()), time.Second))
	}
	return nil
}

// Advance runs the run's steps from where it stands until it ends (zero time) or must wait
// (the time it may go on). Every step's result is recorded before the next starts.
func (s *Service) Advance(ctx context.Context, ws, runID uuid.UUID) (time.Time, error) {
	for {
		until, done, err := s.advanceOne(ctx, ws, runID)
		if err != nil || done || !until.IsZero() {
			return until.UTC(), err
		}
	}
}

// runState is a run and what its steps see.
type runState struct {
	run   store.WorkflowRun
	doc   *Document
	steps map[int]store.WorkflowRunStep // the recorded steps, by index
	trig  runTrigger
}

func (s *Service) load(ctx context.Context, ws, runID uuid.UUID) (*runState, error) {
	r, err := s.store.WorkflowRunByID(ctx, ws, runID)
	if err != nil {
		return nil, err
	}
	st := &runState{run: r, steps: map[int]store.WorkflowRunStep{}}
	if finalStatus(r.Status) {
		return st, nil
	}
	if st.doc, err = Parse([]byte(r.Document)); err != nil {
		return nil, fmt.Errorf("run %s: its document: %w", r.ShortID, err)
	}
	if err := json.Unmarshal(r.Trigger, &st.trig); err != nil {
		return nil, err
	}
	recorded, err := s.store.WorkflowRunSteps(ctx, ws, runID)
	if err != nil {
		return nil, err
	}
	for _, rs := range recorded {
		st.steps[rs.Idx] = rs
	}
	return st, nil
}

// advanceOne takes the run one step further.
func (s *Service) advanceOne(ctx context.Context, ws, runID uuid.UUID) (until time.Time, done bool, err error) {
	st, err := s.load(ctx, ws, runID)
	if errors.Is(err, store.ErrNotFound) {
		return time.Time{}, true, nil // its workflow was deleted
	}
	if err != nil {
		return time.Time{}, false, err
	}
	r, now := st.run, s.cfg.Now()
	switch {
	case finalStatus(r.Status):
		return time.Time{}, true, nil
	case !now.Before(r.Deadline):
		reason := fmt.Sprintf("the run passed its time limit (%s)", st.doc.Timeout)
		return time.Time{}, true, s.end(ctx, st, RunFailed, &reason)
	case r.ResumeAt != nil && now.Before(*r.ResumeAt):
		return *r.ResumeAt, false, nil
	case r.NextStep >= len(st.doc.Steps):
		return time.Time{}, true, s.end(ctx, st, RunSucceeded, nil)
	}
	idx := r.NextStep
	step := st.doc.Steps[idx]
	rec, seen := st.steps[idx]
	if !seen {
		rec = store.WorkflowRunStep{WorkspaceID: ws, RunID: runID, Idx: idx, StepID: step.ID, Type: string(step.Type), StartedAt: now}
	}
	if step.Type.sideEffecting() {
		// The attempt is counted before it starts: a replica dying in it uses it up.
		rec.Attempts++
		rec.Status = "running"
		if ok, err := s.record(ctx, st, idx, func(tx *store.Tx) error {
			return tx.SetWorkflowRunProgress(ctx, runID, RunRunning, idx, nil, now)
		}, rec); err != nil || !ok {
			return time.Time{}, !ok, err
		}
	}
	vars, err := s.vars(ctx, st, now)
	if err != nil {
		return time.Time{}, false, err
	}
	res := s.execute(ctx, st, step, rec, vars)
	return s.settle(ctx, st, idx, step, rec, res)
}

// result is what executing a step gave.
type result struct {
	output    any
	next      int       // the step to run next; -1: the one after
	waitUntil time.Time // a wait that has not ended
	err       error
	transient bool                     // err may pass: try the step again after a backoff
	effect    func(tx *store.Tx) error // database changes that commit with the step's result
	skipped   []int                    // steps an if skipped
	charge    *store.Charge            // agent_prompt's model call
	spendData func(balance int64) any  // spend.recorded's data, given the balance after the charge
}

// settle records a step's result and moves the run on, in one transaction.
func (s *Service) settle(ctx context.Context, st *runState, idx int, step Step, rec store.WorkflowRunStep, res result) (time.Time, bool, error) {
	now := s.cfg.Now()
	r := st.run
	switch {
	case res.err != nil && res.transient && rec.Attempts <= step.Retries:
		resume := now.Add(s.cfg.Backoff(rec.Attempts))
		msg := res.err.Error()
		rec.Status, rec.Error = "retrying", &msg
		ok, err := s.record(ctx, st, idx, func(tx *store.Tx) error {
			if err := s.charge(ctx, tx, r, res); err != nil {
				return err
			}
			return tx.SetWorkflowRunProgress(ctx, r.ID, RunWaiting, idx, &resume, now)
		}, rec)
		return resume, !ok, err
	case res.err != nil:
		msg := res.err.Error()
		rec.Status, rec.Error, rec.FinishedAt = "failed", &msg, &now
		if res.output != nil {
			rec.Output, _ = json.Marshal(res.output)
		}
		reason := fmt.Sprintf("step %s (%s) failed: %s", step.ID, step.Type, msg)
		_, err := s.record(ctx, st, idx, func(tx *store.Tx) error {
			if err := s.charge(ctx, tx, r, res); err != nil {
				return err
			}
			return s.finishLocked(ctx, tx, st, RunFailed, &reason)
		}, rec)
		return time.Time{}, true, err
	case !res.waitUntil.IsZero():
		rec.Status = "waiting"
		rec.Output, _ = json.Marshal(res.output)
		until := res.waitUntil
		ok, err := s.record(ctx, st, idx, func(tx *store.Tx) error {
			return tx.SetWorkflowRunProgress(ctx, r.ID, RunWaiting, idx, &until, now)
		}, rec)
		return until, !ok, err
	}
	rec.Status, rec.Error, rec.FinishedAt = "succeeded", nil, &now
	rec.Output, _ = json.Marshal(res.output)
	next := idx + 1
	if res.next >= 0 {
		next = res.next
	}
	ok, err := s.record(ctx, st, idx, func(tx *store.Tx) error {
		if res.effect != nil {
			if err := res.effect(tx); err != nil {
				return err
			}
		}
		if err := s.charge(ctx, tx, r, res); err != nil {
			return err
		}
		for _, j := range res.skipped {
			sk := st.doc.Steps[j]
			if err := tx.SaveWorkflowRunStep(ctx, store.WorkflowRunStep{WorkspaceID: r.WorkspaceID, RunID: r.ID, Idx: j,
				StepID: sk.ID, Type: string(sk.Type), Status: "skipped", StartedAt: now, FinishedAt: &now}); err != nil {
				return err
			}
		}
		return tx.SetWorkflowRunProgress(ctx, r.ID, RunRunning, next, nil, now)
	}, rec)
	var refused stepRefused
	if errors.As(err, &refused) {
		// The target refused the step's effect (nothing of it committed): the step fails.
		rec.FinishedAt = nil
		return s.settle(ctx, st, idx, step, rec, result{err: refused, next: -1})
	}
	return time.Time{}, !ok, err
}

// charge meters a model call of the step (a ledger row and spend.recorded) in tx.
func (s *Service) charge(ctx context.Context, tx *store.Tx, r store.WorkflowRun, res result) error {
	if res.charge == nil {
		return nil
	}
	_, _, err := tx.Settle(ctx, r.WorkspaceID, res.charge, func(balance int64) []store.NewEvent {
		return []store.NewEvent{{Type: "spend.recorded", Data: res.spendData(balance)}}
	})
	return err
}

// record saves a step and runs then in one transaction, if the run still stands at idx and
// is live: a cancel, or another worker of the same run, wins over this one (ok false: stop).
func (s *Service) record(ctx context.Context, st *runState, idx int, then func(tx *store.Tx) error, rec store.WorkflowRunStep) (ok bool, err error) {
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		if err := lockRunSubjects(ctx, tx, st.run); err != nil {
			return err
		}
		locked, err := tx.LockWorkflowRun(ctx, st.run.WorkspaceID, st.run.ID)
		if err != nil {
			return err
		}
		if finalStatus(locked.Status) || locked.NextStep != idx {
			return nil
		}
		if err := tx.SaveWorkflowRunStep(ctx, rec); err != nil {
			return err
		}
		if err := then(tx); err != nil {
			return err
		}
		ok = true
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return ok, err
}

// lockRunSubjects takes the KEY SHARE locks of the run's contact, then of its conversation,
// before the run's row: a contact's erasure locks the contact, then its conversations, and a
// delete of conversations (bulk, retention) locks them before it clears the runs' link to
// them. A step's effects write both later (a label on the conversation, the contact's fields,
// a message on its channel, the model call's ledger row), after the run's row: taken there,
// the erasure or the delete could hold the conversation while it waited for the run's row
// (TestARunsStepWaitsForADeleteOfItsConversation).
func lockRunSubjects(ctx context.Context, tx *store.Tx, r store.WorkflowRun) error {
	return lockSubjects(ctx, tx, r.WorkspaceID, r.ContactID, r.ConversationID)
}

// lockSubjects takes the KEY SHARE of a run's contact, then of its conversation (either may
// be nil), in a contact erasure's order.
func lockSubjects(ctx context.Context, tx *store.Tx, ws uuid.UUID, contact, conv *uuid.UUID) error {
	if contact != nil {
		if err := tx.KeyShareContact(ctx, ws, *contact); err != nil {
			return err
		}
	}
	if conv == nil {
		return nil
	}
	return tx.KeyShareConversations(ctx, []uuid.UUID{ws}, []uuid.UUID{*conv})
}

// end finishes a live run with its run.completed.
func (s *Service) end(ctx context.Context, st *runState, status string, reason *string) error {
	return s.store.InTx(ctx, func(tx *store.Tx) error { return s.finishLocked(ctx, tx, st, status, reason) })
}

func (s *Service) finishLocked(ctx context.Context, tx *store.Tx, st *runState, status string, reason *string) error {
	locked, err := tx.LockWorkflowRun(ctx, st.run.WorkspaceID, st.run.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil || finalStatus(locked.Status) {
		return err
	}
	return s.finish(ctx, tx, locked, status, reason)
}

// vars are what the step's expressions see, read now.
func (s *Service) vars(ctx context.Context, st *runState, now time.Time) (Vars, error) {
	r := st.run
	v := Vars{Input: st.trig.Input, Steps: map[string]any{}, Now: now,
		Run: map[string]any{"id": r.ShortID, "workflow_id": r.WorkflowShortID}}
	if st.trig.Event != nil {
		v.Event = st.trig.Event
	}
	for _, rec := range st.steps {
		if rec.Status != "succeeded" || len(rec.Output) == 0 {
			continue
		}
		var out any
		if err := json.Unmarshal(rec.Output, &out); err == nil {
			v.Steps[rec.StepID] = out
		}
	}
	if r.ConversationID != nil {
		c, err := s.store.WorkflowConversation(ctx, r.WorkspaceID, *r.ConversationID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return v, err
		}
		if err == nil {
			v.Conversation = map[string]any{"id": c.ShortID, "status": c.Status, "channel": c.Channel, "labels": anyList(c.Labels)}
		}
	}
	if r.ContactID != nil {
		c, err := s.store.ContactByID(ctx, r.WorkspaceID, *r.ContactID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return v, err
		}
		if err == nil {
			v.Contact = map[string]any{"id": c.ID.String(), "name": strOrNil(c.Name), "email": strOrNil(c.Email), "phone": strOrNil(c.Phone)}
		}
	}
	return v, nil
}

func anyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func strOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// IdempotencyKey is the key a run's side-effecting step carries: the same for every attempt
// of the step, so a receiver can drop a request a resumed run sends again.
func IdempotencyKey(runShortID, stepID string) string { return runShortID + "." + stepID }
