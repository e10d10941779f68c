package responses

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"switchboard/access"
	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/gen/v1api"
	"switchboard/llm"
	"switchboard/store"
)

// BackgroundArgs is the durable job of a background response: everything needed to run
// its turn on any replica, after any restart. Its JSON is stored with queued jobs: keep it
// compatible.
type BackgroundArgs struct {
	WorkspaceID    uuid.UUID     `json:"workspace_id"`
	Role           string        `json:"role,omitempty"` // the asking key's role (a job queued before roles has none: no tools that need one)
	KeyID          uuid.UUID     `json:"key_id,omitempty"`
	ResponseID     string        `json:"response_id"`
	MessageID      string        `json:"message_id"`
	Created        time.Time     `json:"created"`
	Model          string        `json:"model"`
	Instructions   []string      `json:"instructions,omitempty"`
	Seed           []seedMessage `json:"seed,omitempty"`
	Text           string        `json:"text"`
	ConversationID *uuid.UUID    `json:"conversation_id,omitempty"`
	Previous       *string       `json:"previous_response_id,omitempty"`
	// InstructionsSent is the request's `instructions` as sent, echoed on the response.
	InstructionsSent *string `json:"instructions_sent,omitempty"`
}

type seedMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// Kind names the job type in the queue.
func (BackgroundArgs) Kind() string { return "background_response" }

// InsertOpts allows 5 attempts: a failed turn is final (the worker records it); attempts beyond the first are
// for infrastructure failures, and for a replica that died mid-turn.
func (BackgroundArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 5} }

// enqueue stores a queued response and its job in one transaction, and returns the queued
// shell, which the caller answers at once.
func (s *Service) enqueue(ctx context.Context, run *Run) (v1api.Response, error) {
	shell := run.Shell(v1api.Queued)
	raw, err := json.Marshal(shell)
	if err != nil {
		return shell, err
	}
	t := run.turn
	args := BackgroundArgs{WorkspaceID: run.WorkspaceID, Role: t.Role.String(), KeyID: t.KeyID, ResponseID: run.ID, MessageID: run.MessageID, Created: run.Created,
		Model: run.Model, Instructions: t.Instructions, Text: t.Text, Previous: run.Previous, InstructionsSent: run.Instructions}
	for _, m := range t.Seed {
		args.Seed = append(args.Seed, seedMessage{Role: string(m.Role), Text: m.Text})
	}
	if t.Conversation != nil {
		args.ConversationID = &t.Conversation.ID
	}
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.InsertResponse(ctx, run.WorkspaceID, store.StoredResponse{ShortID: run.ID, ConversationID: args.ConversationID,
			Status: "queued", Model: run.Model, Background: true, Body: raw}); err != nil {
			return err
		}
		_, err := s.jobs.InsertTx(ctx, tx.Pgx(), args, nil)
		return err
	})
	return shell, err
}

// Worker runs background responses.
type Worker struct {
	river.WorkerDefaults[BackgroundArgs]
	svc *Service
}

// Worker returns the job worker of background responses, for the client that works jobs.
func (s *Service) Worker() *Worker { return &Worker{svc: s} }

// Timeout bounds a run by the response's time-to-live.
func (w *Worker) Timeout(*river.Job[BackgroundArgs]) time.Duration { return w.svc.cfg.TTL }

// Work runs the turn once. The response row is the guard: the turn commits only while the
// response is unfinished (FinishResponse), so a rerun after a crash, a sweep that failed the
// response, or a second run can never charge twice.
func (w *Worker) Work(ctx context.Context, job *river.Job[BackgroundArgs]) error {
	a := job.Args
	st := w.svc.store
	started, err := st.StartResponse(ctx, a.WorkspaceID, a.ResponseID)
	if err != nil {
		return err
	}
	if !started {
		r, err := st.ResponseByShortID(ctx, a.WorkspaceID, a.ResponseID)
		if err != nil {
			return err
		}
		if r.Status != "in_progress" { // finished, or failed by the sweep
			return nil
		}
		// in_progress: an earlier run died before committing; run it again.
	}
	run, err := w.svc.resume(ctx, a)
	if err != nil {
		return err
	}
	_, err = run.Execute(ctx, nil)
	switch {
	case err == nil, errors.Is(err, store.ErrNotFound):
		return nil
	case ctx.Err() != nil:
		return err // stopped (a drain ran out of time): not the turn's failure; the queue retries
	case apierr.As(err) != nil:
		return w.svc.fail(ctx, run, apierr.As(err))
	default:
		return err // infrastructure: the queue retries
	}
}

// outlastOutage is how long a background turn's commit waits for an unreachable database: the
// vendor's answer is kept through a PostgreSQL restart or failover instead of being asked for
// again (the job's timeout, the response's time-to-live, still bounds the run).
const outlastOutage = 2 * time.Minute

// resume rebuilds the run of a queued response from its job.
func (s *Service) resume(ctx context.Context, a BackgroundArgs) (*Run, error) {
	run := &Run{ID: a.ResponseID, MessageID: a.MessageID, WorkspaceID: a.WorkspaceID, Created: a.Created, Model: a.Model,
		Previous: a.Previous, Background: true, Instructions: a.InstructionsSent, stored: true, turns: s.turns}
	role, _ := access.ParseRole(a.Role)
	run.turn = agent.Turn{WorkspaceID: a.WorkspaceID, Role: role, KeyID: a.KeyID, Model: a.Model, Surface: "responses", Instructions: a.Instructions,
		Text: a.Text, Persist: true, OutlastOutage: outlastOutage}
	for _, m := range a.Seed {
		run.turn.Seed = append(run.turn.Seed, llm.Message{Role: llm.Role(m.Role), Text: m.Text})
	}
	if a.ConversationID != nil {
		conv, err := s.store.ConversationByRef(ctx, a.WorkspaceID, a.ConversationID.String())
		if err != nil {
			return nil, err
		}
		run.turn.Conversation = &conv
	}
	run.turn.Record = run.finish
	return run, nil
}

// fail stores the error on the response and announces it.
func (s *Service) fail(ctx context.Context, run *Run, e *apierr.Error) error {
	body := run.Shell(v1api.Failed)
	body.Error = FailedError(e)
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	err = s.store.InTx(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		if err := tx.FinishResponse(ctx, run.WorkspaceID, store.StoredResponse{ShortID: run.ID, Status: "failed", Body: raw}); err != nil {
			return err
		}
		_, err := tx.AppendEvents(ctx, run.WorkspaceID, []store.NewEvent{responseEvent(run.ID, nil, "failed")})
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// responseEvent is the `meta_response.completed` event of a background response. Its data
// keys are camelCase, as the contract specifies for this event alone.
func responseEvent(responseID string, conversation *string, status string) store.NewEvent {
	return store.NewEvent{Type: "meta_response.completed", Data: map[string]any{
		"responseId": responseID, "conversationId": conversation, "status": status}}
}

// FailedError is the `error` of a failed response. Its code is one of the reference API's
// closed list (ResponseErrorCode), so that strictly typed clients can read it; the
// service's own reason is kept in the message.
func FailedError(e *apierr.Error) *v1api.Error {
	msg := e.Message
	if e.Code != "" {
		msg += " (" + e.Code + ")"
	}
	code := failedCode(e)
	return &v1api.Error{Message: msg, Type: e.Type(), Code: &code, Hint: e.Hint}
}

func failedCode(e *apierr.Error) string {
	switch {
	case e.Kind == apierr.KindRateLimited || e.Code == string(llm.ErrRateLimited) || e.Code == "rate_limit_exceeded":
		return "rate_limit_exceeded"
	case e.Kind == apierr.KindInvalid:
		return "invalid_prompt"
	}
	return "server_error"
}
