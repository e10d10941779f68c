package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/gen/v1api"
	"switchboard/llm"
	"switchboard/store"
)

// BackgroundArgs is the durable job of a background response: everything needed to run
// its turn on any replica, after any restart.
type BackgroundArgs struct {
	WorkspaceID    uuid.UUID     `json:"workspace_id"`
	ResponseID     string        `json:"response_id"`
	MessageID      string        `json:"message_id"`
	Created        time.Time     `json:"created"`
	Model          string        `json:"model"`
	Instructions   []string      `json:"instructions,omitempty"`
	Seed           []seedMessage `json:"seed,omitempty"`
	Text           string        `json:"text"`
	ConversationID *uuid.UUID    `json:"conversation_id,omitempty"`
	Previous       *string       `json:"previous_response_id,omitempty"`
}

type seedMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// Kind names the job type in the queue.
func (BackgroundArgs) Kind() string { return "background_response" }

// InsertOpts: a failed turn is final (the worker records it); attempts beyond the first are
// for infrastructure failures, and for a replica that died mid-turn.
func (BackgroundArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 5} }

// enqueue stores a queued response and its job in one transaction, and answers with the
// queued shell at once.
func (h *v1Handlers) enqueue(ctx context.Context, p pendingResponse, t agent.Turn) (v1api.CreateResponseResponseObject, error) {
	shell := p.shell("queued")
	raw, err := json.Marshal(shell)
	if err != nil {
		return nil, err
	}
	args := BackgroundArgs{WorkspaceID: t.WorkspaceID, ResponseID: p.id, MessageID: p.messageID, Created: p.created,
		Model: p.model, Instructions: t.Instructions, Text: t.Text, Previous: p.previous}
	for _, m := range t.Seed {
		args.Seed = append(args.Seed, seedMessage{Role: string(m.Role), Text: m.Text})
	}
	if t.Conversation != nil {
		args.ConversationID = &t.Conversation.ID
	}
	err = h.s.store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.InsertResponse(ctx, t.WorkspaceID, store.StoredResponse{ShortID: p.id, ConversationID: args.ConversationID,
			Status: "queued", Model: p.model, Background: true, Body: raw}); err != nil {
			return err
		}
		_, err := h.s.jobs.InsertTx(ctx, tx.Pgx(), args, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rawJSON{status: http.StatusOK, body: raw}, nil
}

// BackgroundWorker runs background responses.
type BackgroundWorker struct {
	river.WorkerDefaults[BackgroundArgs]
	store *store.Store
	turns *agent.Pipeline
	ttl   time.Duration
	log   *slog.Logger
}

// NewBackgroundWorker returns the worker; ttl bounds one run (RESPONSE_TTL).
func NewBackgroundWorker(st *store.Store, turns *agent.Pipeline, ttl time.Duration, log *slog.Logger) *BackgroundWorker {
	return &BackgroundWorker{store: st, turns: turns, ttl: ttl, log: log}
}

// SetTurns gives the worker its pipeline; call it before the job queue starts.
func (w *BackgroundWorker) SetTurns(turns *agent.Pipeline) { w.turns = turns }

// Timeout bounds a run by the response's time-to-live.
func (w *BackgroundWorker) Timeout(*river.Job[BackgroundArgs]) time.Duration { return w.ttl }

// Work runs the turn once. The response row is the guard: the turn commits only while the
// response is unfinished (FinishResponse), so a rerun after a crash, a sweep that failed the
// response, or a second run can never charge twice.
func (w *BackgroundWorker) Work(ctx context.Context, job *river.Job[BackgroundArgs]) error {
	a := job.Args
	started, err := w.store.StartResponse(ctx, a.WorkspaceID, a.ResponseID)
	if err != nil {
		return err
	}
	if !started {
		r, err := w.store.ResponseByShortID(ctx, a.WorkspaceID, a.ResponseID)
		if err != nil {
			return err
		}
		if r.Status != "in_progress" { // finished, or failed by the sweep
			return nil
		}
		// in_progress: an earlier run died before committing; run it again.
	}
	turn, p, err := w.turn(ctx, a)
	if err != nil {
		return err
	}
	_, err = w.turns.Run(ctx, turn)
	switch {
	case err == nil, errors.Is(err, store.ErrNotFound):
		return nil
	case apierr.As(err) != nil:
		return w.fail(ctx, p, a, apierr.As(err))
	default:
		return err // infrastructure: the queue retries
	}
}

func (w *BackgroundWorker) turn(ctx context.Context, a BackgroundArgs) (agent.Turn, pendingResponse, error) {
	p := pendingResponse{id: a.ResponseID, messageID: a.MessageID, workspace: a.WorkspaceID, created: a.Created,
		model: a.Model, previous: a.Previous, stored: true, background: true}
	t := agent.Turn{WorkspaceID: a.WorkspaceID, Model: a.Model, Surface: "responses", Instructions: a.Instructions,
		Text: a.Text, Persist: true}
	for _, m := range a.Seed {
		t.Seed = append(t.Seed, llm.Message{Role: llm.Role(m.Role), Text: m.Text})
	}
	if a.ConversationID != nil {
		conv, err := w.store.ConversationByRef(ctx, a.WorkspaceID, a.ConversationID.String())
		if err != nil {
			return t, p, err
		}
		t.Conversation = &conv
	}
	t.Record = func(ctx context.Context, tx *store.Tx, out *agent.Outcome) ([]store.NewEvent, error) {
		raw, err := json.Marshal(p.completed(out))
		if err != nil {
			return nil, err
		}
		if err := tx.FinishResponse(ctx, a.WorkspaceID, store.StoredResponse{ShortID: p.id, ConversationID: &out.Conversation.ID,
			Status: "completed", Body: raw}); err != nil {
			return nil, err
		}
		return []store.NewEvent{responseEvent(p.id, &out.Conversation.ShortID, "completed")}, nil
	}
	return t, p, nil
}

// fail stores the error on the response and announces it.
func (w *BackgroundWorker) fail(ctx context.Context, p pendingResponse, a BackgroundArgs, e *apierr.Error) error {
	body := p.shell("failed")
	envelope := envelopeError{Message: e.Message, Type: e.Type(), Hint: e.Hint}
	if e.Code != "" {
		envelope.Code = &e.Code
	}
	body.Error = &envelope
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	err = w.store.InTx(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		if err := tx.FinishResponse(ctx, a.WorkspaceID, store.StoredResponse{ShortID: p.id, Status: "failed", Body: raw}); err != nil {
			return err
		}
		_, err := tx.AppendEvents(ctx, a.WorkspaceID, []store.NewEvent{responseEvent(p.id, nil, "failed")})
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

// SweepStuckResponses fails the background responses unfinished after ttl, storing the
// error and announcing each, in one transaction. Replicas may sweep at once: each response
// is failed (and announced) by exactly one of them.
func SweepStuckResponses(ctx context.Context, st *store.Store, ttl time.Duration) (int, error) {
	code := "response_timed_out"
	errBody, err := json.Marshal(envelopeError{Type: "server_error", Code: &code,
		Message: "The background response did not finish within its time-to-live (" + ttl.String() + ")."})
	if err != nil {
		return 0, err
	}
	var n int
	err = st.InTx(ctx, func(tx *store.Tx) error {
		stuck, err := tx.FailStuckResponses(ctx, ttl, errBody)
		if err != nil {
			return err
		}
		n = len(stuck)
		byWorkspace := map[uuid.UUID][]store.NewEvent{}
		var order []uuid.UUID
		for _, s := range stuck {
			if byWorkspace[s.WorkspaceID] == nil {
				order = append(order, s.WorkspaceID)
			}
			byWorkspace[s.WorkspaceID] = append(byWorkspace[s.WorkspaceID], responseEvent(s.ShortID, s.Conversation, "failed"))
		}
		// Lock workspace rows in one order, so that concurrent sweeps cannot deadlock.
		slices.SortFunc(order, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
		for _, ws := range order {
			if _, err := tx.AppendEvents(ctx, ws, byWorkspace[ws]); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}
