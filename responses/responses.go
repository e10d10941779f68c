// Package responses is the /v1 turn domain: creating a response (inline, streamed, or queued
// in the background), reading a stored one, at-most-once creation under an Idempotency-Key,
// the durable background worker and the sweep of stuck responses, and the chat-completion
// turns that share the same input rules. Handlers in server/ only translate HTTP to these
// calls; the turn itself runs in agent/, and every write goes through store/.
package responses

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"switchboard/access"
	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/gen/v1api"
	"switchboard/shortid"
	"switchboard/store"
)

// Config is the domain's share of the process configuration, complete as loaded (no
// defaults are applied here).
type Config struct {
	// TTL bounds a background response: past it, the sweep fails it (RESPONSE_TTL).
	TTL time.Duration
	// IdempotencyRetention is how long an Idempotency-Key replays its response (IDEMPOTENCY_TTL).
	IdempotencyRetention time.Duration
}

// Service creates and reads responses.
type Service struct {
	cfg   Config
	store *store.Store
	turns *agent.Pipeline
	jobs  *river.Client[pgx.Tx] // inserts background jobs; whichever client works them
	keys  KeyWaiter             // tells requests waiting for an Idempotency-Key when to look again
	log   *slog.Logger

	idempotencyRecheck time.Duration
	onClaim            func() // a test's hook, called before each claim of an Idempotency-Key
	// after is the clock a waiting Idempotency-Key retry waits by (time.After); tests fire
	// its channels by hand.
	after func(time.Duration) <-chan time.Time
}

// New returns the service. jobs only inserts: an insert-only River client is enough.
func New(cfg Config, st *store.Store, turns *agent.Pipeline, jobs *river.Client[pgx.Tx], keys KeyWaiter, log *slog.Logger) *Service {
	return &Service{cfg: cfg, store: st, turns: turns, jobs: jobs, keys: keys, log: log, idempotencyRecheck: idempotencyRecheck,
		after: time.After}
}

// CreateRequest is POST /v1/responses, decoded.
type CreateRequest struct {
	WorkspaceID        uuid.UUID
	Role               access.Role // the key's role: what the assistant may do
	KeyID              uuid.UUID   // the key; uuid.Nil for the development user
	Model              string      // empty: the catalog's default
	Input              TurnInput
	PreviousResponseID string // empty: a new conversation
	Store              bool
	Background         bool
	Stream             bool
	// Instructions is the request's `instructions` field as sent (nil when absent), echoed
	// on the response; Input.Instructions holds it too, with the lifted system messages.
	Instructions *string
	// IdempotencyKey, with Body (the request as sent, compared canonically), makes a stored,
	// inline create happen at most once.
	IdempotencyKey string
	Body           any
}

// CheckOptions refuses the combinations of store, background and stream that cannot work.
// Create and Stream check them too; a handler may call it first, so that a bad combination
// is reported before anything else about the request.
func (req CreateRequest) CheckOptions() error {
	switch {
	case req.Background && !req.Store:
		return apierr.Invalid("background", "background_requires_store", "`background: true` cannot be combined with `store: false`: a background response must be stored to be fetched.")
	case req.Background && req.Stream:
		return apierr.Invalid("stream", "unsupported_combination", "`background: true` cannot be combined with `stream: true`: poll GET /v1/responses/{id} or follow GET /v1/events instead.")
	}
	return nil
}

// Created is the answer to a create that is not streamed: a fresh object, or the stored
// body of an idempotent replay, verbatim.
type Created struct {
	Response v1api.Response
	// Body is Response as the turn stored it (nil when nothing was stored): the bytes to
	// answer, the same a GET returns.
	Body   json.RawMessage
	Replay json.RawMessage
}

// Create runs one turn inline, or queues it in the background; with an Idempotency-Key, at
// most once. Streamed creates go through Stream.
func (s *Service) Create(ctx context.Context, req CreateRequest) (Created, error) {
	run, err := s.prepare(ctx, req)
	if err != nil {
		return Created{}, err
	}
	switch {
	case req.Background:
		shell, err := s.enqueue(ctx, run)
		return Created{Response: shell}, err
	case req.Store && req.IdempotencyKey != "":
		return s.idempotent(ctx, req, run)
	}
	out, err := run.Execute(ctx, nil)
	if err != nil {
		return Created{}, err
	}
	return run.created(out), nil
}

// Stream prepares a streamed create; the caller writes the events while Execute runs.
func (s *Service) Stream(ctx context.Context, req CreateRequest) (*Run, error) {
	return s.prepare(ctx, req)
}

// Get returns the stored body of a response of the workspace, verbatim: a GET answers the
// exact bytes the create stored.
func (s *Service) Get(ctx context.Context, workspaceID uuid.UUID, id string) (json.RawMessage, error) {
	r, err := s.store.ResponseByShortID(ctx, workspaceID, id)
	return r.Body, apierr.WithParam(err, "id")
}

// prepare checks the combination of options, resolves previous_response_id and fixes the
// response's identity.
func (s *Service) prepare(ctx context.Context, req CreateRequest) (*Run, error) {
	if err := req.CheckOptions(); err != nil {
		return nil, err
	}
	model := req.Model
	if model == "" {
		model = catalog.DefaultModel
	}
	run := &Run{ID: shortid.New(shortid.Response), MessageID: shortid.New(shortid.Message), WorkspaceID: req.WorkspaceID,
		Created: time.Now(), Model: model, Background: req.Background, Instructions: req.Instructions, stored: req.Store, turns: s.turns}
	run.turn = agent.Turn{WorkspaceID: req.WorkspaceID, Role: req.Role, KeyID: req.KeyID, Model: model, Surface: "responses",
		Instructions: req.Input.Instructions, Seed: req.Input.Seed, Text: req.Input.Text, Persist: req.Store}
	if prev := req.PreviousResponseID; prev != "" {
		conv, err := s.previousConversation(ctx, req.WorkspaceID, prev)
		if err != nil {
			return nil, err
		}
		run.turn.Conversation, run.Previous = &conv, &prev
	}
	if req.Store {
		run.turn.Record = run.insert("")
	}
	return run, nil
}

// previousConversation resolves previous_response_id to its conversation, in the caller's
// workspace only.
func (s *Service) previousConversation(ctx context.Context, workspaceID uuid.UUID, id string) (store.Conversation, error) {
	notFound := apierr.NotFound("previous_response_id", "response_not_found", "No stored response %q in this workspace (responses created with `store: false` cannot be continued).", id)
	r, err := s.store.ResponseByShortID(ctx, workspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Conversation{}, notFound
	}
	if err != nil {
		return store.Conversation{}, err
	}
	if r.ConversationID == nil {
		return store.Conversation{}, apierr.Conflict("response_not_finished", "The response %q has not finished yet; continue it once GET /v1/responses/%s shows it completed.", id, id)
	}
	conv, err := s.store.ConversationByRef(ctx, workspaceID, r.ConversationID.String())
	if errors.Is(err, store.ErrNotFound) {
		return store.Conversation{}, notFound
	}
	return conv, err
}
