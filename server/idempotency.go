package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/gen/v1api"
	"switchboard/store"
)

// idempotencyLock is how long a claim protects a running request: beyond it, a retry may
// take the key over (its holder is presumed dead). It exceeds any turn's duration.
const idempotencyLock = 10 * time.Minute

// idempotencyWait bounds how long a retry waits for the first request with its key; then
// it answers 409 and the client retries later.
const idempotencyWait = 60 * time.Second

// canonicalHash hashes the body in a canonical JSON form: decoded and re-encoded with sorted
// keys, so key order and spacing do not make two equal requests differ.
func canonicalHash(body any) ([]byte, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	canonical, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canonical)
	return sum[:], nil
}

// idempotent runs the turn at most once per (workspace, key). A retry with the same body
// replays the stored response without calling the model; one still running is waited for.
func (h *v1Handlers) idempotent(ctx context.Context, key string, body *v1api.CreateResponseRequest, p pendingResponse, t agent.Turn) (v1api.CreateResponseResponseObject, error) {
	sum, err := canonicalHash(body)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(idempotencyWait)
	for {
		claim, err := h.s.store.ClaimIdempotencyKey(ctx, t.WorkspaceID, key, sum, idempotencyLock, h.s.cfg.IdempotencyRetention)
		if err != nil {
			return nil, err
		}
		switch {
		case claim.Mismatch:
			return nil, apierr.Unprocessable("Idempotency-Key", "idempotency_key_reused", "This Idempotency-Key was already used with a different request body; use a new key for a new request.")
		case claim.ResponseID != "":
			return h.replay(ctx, t, claim.ResponseID)
		case claim.Owned:
			return h.runClaimed(ctx, key, p, t)
		}
		if time.Now().After(deadline) {
			return nil, apierr.Conflict("idempotency_key_in_use", "A request with this Idempotency-Key is still running; retry in a few seconds.")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (h *v1Handlers) runClaimed(ctx context.Context, key string, p pendingResponse, t agent.Turn) (v1api.CreateResponseResponseObject, error) {
	t.Record = func(ctx context.Context, tx *store.Tx, out *agent.Outcome) ([]store.NewEvent, error) {
		events, err := p.record(ctx, tx, out)
		if err != nil {
			return nil, err
		}
		return events, tx.CompleteIdempotencyKey(ctx, t.WorkspaceID, key, p.id)
	}
	out, err := h.s.turns.Run(ctx, t)
	if err != nil {
		// The turn did not commit: free the key so that a retry runs it.
		_ = h.s.store.ReleaseIdempotencyKey(context.WithoutCancel(ctx), t.WorkspaceID, key)
		return nil, err
	}
	return jsonBody{status: http.StatusOK, body: p.completed(out)}, nil
}

func (h *v1Handlers) replay(ctx context.Context, t agent.Turn, responseID string) (v1api.CreateResponseResponseObject, error) {
	r, err := h.s.store.ResponseByShortID(ctx, t.WorkspaceID, responseID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("Idempotency-Key", "response_not_found", "The response stored for this Idempotency-Key no longer exists.")
	}
	if err != nil {
		return nil, err
	}
	return replayed{rawJSON{status: http.StatusOK, body: r.Body}}, nil
}

// replayed marks a replay with `Idempotent-Replayed: true`, as other APIs do, so clients
// and logs can tell a replay from a fresh run.
type replayed struct{ rawJSON }

func (r replayed) VisitCreateResponseResponse(w http.ResponseWriter) error {
	w.Header().Set("Idempotent-Replayed", "true")
	return r.write(w)
}
