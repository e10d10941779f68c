package responses

import (
	"context"
	"time"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/shortid"
)

// ChatRequest is POST /v1/chat/completions, decoded. With Conversation the server owns the
// history and only the last user message is read; without it, the whole input seeds an
// ephemeral turn that stores nothing but its spend.
type ChatRequest struct {
	WorkspaceID  uuid.UUID
	Role         access.Role // the key's role: what the assistant may do
	KeyID        uuid.UUID   // the key; uuid.Nil for the development user
	Model        string      // empty: the catalog's default
	Input        TurnInput
	Conversation *string // `mc-` id or UUID
}

// ChatRun is a chat completion whose identity is fixed before the turn runs.
type ChatRun struct {
	ID           string
	Created      time.Time
	Model        string
	Conversation string // the `mc-` id on stateful turns
	turn         agent.Turn
	turns        *agent.Pipeline
}

// Chat prepares a chat completion.
func (s *Service) Chat(ctx context.Context, req ChatRequest) (*ChatRun, error) {
	model := req.Model
	if model == "" {
		model = catalog.DefaultModel
	}
	run := &ChatRun{ID: shortid.New(shortid.ChatCompl), Created: time.Now(), Model: model, turns: s.turns}
	run.turn = agent.Turn{WorkspaceID: req.WorkspaceID, Role: req.Role, KeyID: req.KeyID, Model: model, Surface: "chat.completions",
		Instructions: req.Input.Instructions, Text: req.Input.Text}
	if ref := req.Conversation; ref != nil {
		conv, err := s.store.ConversationByRef(ctx, req.WorkspaceID, *ref)
		if err != nil {
			return nil, apierr.WithParam(err, "conversation")
		}
		run.turn.Conversation, run.turn.Persist, run.Conversation = &conv, true, conv.ShortID
	} else {
		run.turn.Seed = req.Input.Seed
	}
	return run, nil
}

// Execute runs the turn; onDelta (optional) receives the reply text as it is produced.
func (r *ChatRun) Execute(ctx context.Context, onDelta func(string) error) (*agent.Outcome, error) {
	t := r.turn
	t.OnDelta = onDelta
	return r.turns.Run(ctx, t)
}
