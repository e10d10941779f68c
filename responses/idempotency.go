package responses

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/store"
)

// idempotencyLock is how long a claim protects a running request: beyond it, a retry may
// take the key over (its holder is presumed dead). It exceeds any turn's duration.
const idempotencyLock = 10 * time.Minute

// idempotencyWait bounds how long a retry waits for the first request with its key; then
// it answers 409 and the client retries later.
const idempotencyWait = 60 * time.Second

// idempotencyRecheck is how often a waiting retry looks at the key again without being told
// to: announcements (KeyWaiter) can be lost, and a holder that died tells nobody (its lock
// runs out).
const idempotencyRecheck = 3 * time.Second

// KeyWaiter tells a request waiting for an Idempotency-Key when the key was completed or
// released (events.Hub, over the process's one LISTEN connection). changed may also fire
// for no reason; the waiter then looks again. Call stop when done.
type KeyWaiter interface {
	WaitKey(workspaceID uuid.UUID, key string) (changed <-chan struct{}, stop func())
}

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
func (s *Service) idempotent(ctx context.Context, req CreateRequest, run *Run) (Created, error) {
	sum, err := canonicalHash(req.Body)
	if err != nil {
		return Created{}, err
	}
	// Listen before the first look, so that a completion right after it is heard.
	var changed <-chan struct{} // without a KeyWaiter, only the re-checks
	if s.keys != nil {
		var stop func()
		changed, stop = s.keys.WaitKey(req.WorkspaceID, req.IdempotencyKey)
		defer stop()
	}
	deadline := s.after(idempotencyWait)
	for {
		if s.onClaim != nil {
			s.onClaim()
		}
		claim, err := s.store.ClaimIdempotencyKey(ctx, req.WorkspaceID, req.IdempotencyKey, sum, idempotencyLock, s.cfg.IdempotencyRetention)
		if err != nil {
			return Created{}, err
		}
		switch {
		case claim.Mismatch:
			return Created{}, apierr.Unprocessable("Idempotency-Key", "idempotency_key_reused", "This Idempotency-Key was already used with a different request body; use a new key for a new request.")
		case claim.ResponseID != "":
			return s.replay(ctx, req, claim.ResponseID)
		case claim.Owned:
			return s.runClaimed(ctx, req, run)
		}
		recheck := s.after(s.idempotencyRecheck)
		select {
		case <-ctx.Done():
			return Created{}, ctx.Err()
		case <-deadline:
			return Created{}, apierr.Conflict("idempotency_key_in_use", "A request with this Idempotency-Key is still running; retry in a few seconds.")
		case <-changed:
		case <-recheck:
		}
	}
}

// runClaimed runs the turn of a key this request owns; the key is completed in the turn's
// transaction, so a committed turn always replays.
func (s *Service) runClaimed(ctx context.Context, req CreateRequest, run *Run) (Created, error) {
	run.turn.Record = run.insert(req.IdempotencyKey)
	out, err := run.Execute(ctx, nil)
	if err != nil {
		// The turn did not commit: free the key so that a retry runs it.
		_ = s.store.ReleaseIdempotencyKey(context.WithoutCancel(ctx), req.WorkspaceID, req.IdempotencyKey)
		return Created{}, err
	}
	return run.created(out), nil
}

func (s *Service) replay(ctx context.Context, req CreateRequest, responseID string) (Created, error) {
	r, err := s.store.ResponseByShortID(ctx, req.WorkspaceID, responseID)
	if errors.Is(err, store.ErrNotFound) {
		return Created{}, apierr.NotFound("Idempotency-Key", "response_not_found", "The response stored for this Idempotency-Key no longer exists.")
	}
	if err != nil {
		return Created{}, err
	}
	return Created{Replay: r.Body}, nil
}
