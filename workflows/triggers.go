package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"switchboard/store"
)

// Triggers are matched by a periodic job (TickArgs): each event workflow keeps a cursor in
// its workspace's event log and starts one run per matching event after it; each schedule
// workflow keeps the time it fires next. Both move in the transaction that starts the runs,
// and a run's trigger key (the event id, the schedule's time) is unique per workflow, so an
// event or a time starts one run, whichever replica sees it and however often.

// tickBatch bounds the workflows, and the events of each, one tick looks at.
const tickBatch = 100

// TickArgs is the periodic job that starts the runs of event and schedule triggers.
type TickArgs struct{}

// Kind names the job.
func (TickArgs) Kind() string { return "workflow_tick" }

// InsertOpts keeps one tick at a time, on the workflows queue.
func (TickArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateScheduled}}}
}

// PeriodicJobs is the tick, every TickPeriod.
func (s *Service) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(s.cfg.TickPeriod),
		func() (river.JobArgs, *river.InsertOpts) { return TickArgs{}, nil }, &river.PeriodicJobOpts{ID: "workflow_tick", RunOnStart: true})}
}

// TickWorker works TickArgs.
type TickWorker struct {
	river.WorkerDefaults[TickArgs]
	s *Service
}

// TickWorker is the tick's worker.
func (s *Service) TickWorker() *TickWorker { return &TickWorker{s: s} }

// Work starts the runs due.
func (w *TickWorker) Work(ctx context.Context, _ *river.Job[TickArgs]) error {
	_, err := w.s.Tick(ctx)
	return err
}

// Tick starts the runs of every event and schedule trigger due now, and returns how many
// it started.
func (s *Service) Tick(ctx context.Context) (int, error) {
	n, err := s.tickEvents(ctx)
	if err != nil {
		return n, err
	}
	m, err := s.tickSchedules(ctx)
	return n + m, err
}

// tickEvents matches events to event triggers, a batch of workflows per transaction, until
// no workflow has events left to look at.
func (s *Service) tickEvents(ctx context.Context) (int, error) {
	started := 0
	for {
		var n, seen int
		err := s.store.InTx(ctx, func(tx *store.Tx) (err error) {
			n, seen, err = s.tickEventBatch(ctx, tx)
			return err
		})
		if err != nil {
			return started, err
		}
		started += n
		if seen < tickBatch {
			return started, nil
		}
	}
}

// tickEventBatch starts the runs of a batch of event workflows, and moves their cursors. It
// matches every workflow's events first, then locks the runs' contacts and conversations
// (lockStartSubjects), then inserts the runs: inserting them in the events' order would take
// each one's locks in that order, and a contact's erasure or a delete of conversations, which
// lock theirs in id order, could each hold what the other waits for.
func (s *Service) tickEventBatch(ctx context.Context, tx *store.Tx) (started, seen int, err error) {
	flows, err := tx.LockEventWorkflows(ctx, tickBatch)
	if err != nil {
		return 0, 0, err
	}
	var starts []eventStart
	cursors := make([]int64, len(flows))
	for i, w := range flows {
		var matched []eventStart
		if matched, cursors[i], err = s.matchEvents(ctx, tx, w); err != nil {
			return 0, 0, err
		}
		starts = append(starts, matched...)
	}
	if err := lockStartSubjects(ctx, tx, starts); err != nil {
		return 0, 0, err
	}
	for _, st := range starts {
		key := st.key
		_, ok, err := s.start(ctx, tx, st.flow, st.trigger, &key, st.conv, st.contact)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			started++
		}
	}
	for i, w := range flows {
		if err := tx.SetWorkflowCursor(ctx, w.ID, cursors[i]); err != nil {
			return 0, 0, err
		}
	}
	return started, len(flows), nil
}

// eventStart is a run an event is to start: the event's id is its trigger key.
type eventStart struct {
	flow          store.Workflow
	trigger       runTrigger
	key           string
	conv, contact *uuid.UUID
}

// matchEvents returns a run to start for each of the workflow's events after its cursor (a
// batch) that passes its condition, and the cursor past them.
func (s *Service) matchEvents(ctx context.Context, tx *store.Tx, w store.Workflow) ([]eventStart, int64, error) {
	until, err := tx.WorkspaceEventSeq(ctx, w.WorkspaceID)
	if err != nil {
		return nil, 0, err
	}
	// Neither can happen (documents are valid when saved): the workflow's events are passed
	// over, so that one bad document does not hold its batch's others.
	doc, err := Parse([]byte(w.Document))
	if err != nil {
		s.log.Error("a stored workflow does not parse; its events are passed over", "workflow", w.ShortID, "error", err)
		return nil, until, nil
	}
	if w.TriggerEvent == nil {
		return nil, until, nil
	}
	events, err := tx.EventsOfTypeAfter(ctx, w.WorkspaceID, *w.TriggerEvent, w.EventCursor, until, tickBatch)
	if err != nil {
		return nil, 0, err
	}
	cursor := until
	if len(events) == tickBatch {
		cursor = events[len(events)-1].Seq
	}
	var starts []eventStart
	for _, ev := range events {
		var envelope map[string]any
		if err := json.Unmarshal([]byte(ev.Envelope), &envelope); err != nil {
			return nil, 0, err
		}
		conv, contact, err := eventSubjects(ctx, tx, w.WorkspaceID, envelope)
		if err != nil {
			return nil, 0, err
		}
		if doc.Trigger.Condition != nil {
			v := Vars{Event: envelope, Now: s.cfg.Now()}
			if conv != nil {
				if c, err := tx.WorkflowConversation(ctx, w.WorkspaceID, *conv); err == nil {
					v.Conversation = map[string]any{"id": c.ShortID, "status": c.Status, "channel": c.Channel, "labels": anyList(c.Labels)}
				}
			}
			ok, err := doc.Trigger.Condition.Bool(ctx, v)
			if err != nil {
				s.log.Warn("workflow trigger condition failed", "workflow", w.ShortID, "event", ev.ShortID, "error", err)
			}
			if err != nil || !ok {
				continue
			}
		}
		starts = append(starts, eventStart{flow: w, trigger: runTrigger{Type: TriggerEvent, Event: envelope}, key: ev.ShortID, conv: conv, contact: contact})
	}
	return starts, cursor, nil
}

// lockStartSubjects takes the KEY SHARE locks of the runs' contacts, then of their
// conversations, each in id order: the order of a contact's erasure (the contact, then its
// conversations) and of a delete of conversations, whose FOR UPDATE waits for them.
func lockStartSubjects(ctx context.Context, tx *store.Tx, starts []eventStart) error {
	var contactWS, contacts, convWS, convs []uuid.UUID
	for _, st := range starts {
		if st.contact != nil {
			contactWS, contacts = append(contactWS, st.flow.WorkspaceID), append(contacts, *st.contact)
		}
		if st.conv != nil {
			convWS, convs = append(convWS, st.flow.WorkspaceID), append(convs, *st.conv)
		}
	}
	if len(contacts) > 0 {
		if err := tx.KeyShareContacts(ctx, contactWS, contacts); err != nil {
			return err
		}
	}
	if len(convs) == 0 {
		return nil
	}
	return tx.KeyShareConversations(ctx, convWS, convs)
}

// eventSubjects are the conversation and contact an event names (data.conversation_id, a
// `mc-` id; data.contact_id), when they are the workspace's.
func eventSubjects(ctx context.Context, tx *store.Tx, ws uuid.UUID, envelope map[string]any) (conv, contact *uuid.UUID, err error) {
	data, _ := envelope["data"].(map[string]any)
	if ref, ok := data["conversation_id"].(string); ok && ref != "" {
		c, err := tx.ConversationByRef(ctx, ws, ref)
		if err == nil {
			conv = &c.ID
			if wc, err := tx.WorkflowConversation(ctx, ws, c.ID); err == nil {
				contact = wc.ContactID
			}
		}
	}
	if ref, ok := data["contact_id"].(string); ok {
		if id, err := uuid.Parse(ref); err == nil {
			contact = &id
		}
	}
	return conv, contact, nil
}

// tickSchedules starts one run per due schedule and sets its next time. A schedule that
// missed several times while no replica ran starts one run, for the latest of them.
func (s *Service) tickSchedules(ctx context.Context) (int, error) {
	started := 0
	now := s.cfg.Now()
	for {
		var seen int
		err := s.store.InTx(ctx, func(tx *store.Tx) error {
			due, err := tx.LockDueSchedules(ctx, now, tickBatch)
			if err != nil {
				return err
			}
			seen = len(due)
			for _, w := range due {
				doc, err := Parse([]byte(w.Document))
				if err != nil || doc.Trigger.Type != TriggerSchedule {
					if err := tx.SetWorkflowNextFire(ctx, w.ID, nil); err != nil {
						return err
					}
					continue
				}
				at := w.NextFireAt.UTC()
				key := "schedule:" + at.Format(time.RFC3339)
				_, ok, err := s.start(ctx, tx, w, runTrigger{Type: TriggerSchedule, At: &at}, &key, nil, nil)
				if err != nil {
					return fmt.Errorf("workflow %s: %w", w.ShortID, err)
				}
				if ok {
					started++
				}
				next := doc.Trigger.Next(now)
				if err := tx.SetWorkflowNextFire(ctx, w.ID, &next); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || seen < tickBatch {
			return started, err
		}
	}
}
