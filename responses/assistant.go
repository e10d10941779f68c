package responses

import (
	"context"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/shortid"
)

// AssistantRequest is POST /api/chat, decoded: one turn of the builder assistant in a stored
// conversation (a new one without Conversation).
type AssistantRequest struct {
	WorkspaceID  uuid.UUID
	Role         access.Role
	KeyID        uuid.UUID
	Model        string // empty: the catalog's default
	Message      string
	Conversation *string // `mc-` id or UUID
}

// AssistantRun is a builder-assistant turn whose conversation id is known before it runs, so
// a stream can announce it first.
type AssistantRun struct {
	Model        string
	Conversation string // the `mc-` id, reserved for a new conversation until the turn commits
	turn         agent.Turn
	turns        *agent.Pipeline
}

// Assistant prepares a builder-assistant turn.
func (s *Service) Assistant(ctx context.Context, req AssistantRequest) (*AssistantRun, error) {
	model := req.Model
	if model == "" {
		model = catalog.DefaultModel
	}
	run := &AssistantRun{Model: model, turns: s.turns}
	run.turn = agent.Turn{WorkspaceID: req.WorkspaceID, Role: req.Role, KeyID: req.KeyID, Model: model,
		Surface: "api.chat", Text: req.Message, Persist: true}
	if ref := req.Conversation; ref != nil {
		conv, err := s.store.ConversationByRef(ctx, req.WorkspaceID, *ref)
		if err != nil {
			return nil, apierr.WithParam(err, "conversation_id")
		}
		run.turn.Conversation, run.Conversation = &conv, conv.ShortID
	} else {
		run.Conversation = shortid.New(shortid.Conversation)
		run.turn.NewConversationID = run.Conversation
	}
	return run, nil
}

// Execute runs the turn; onDelta (optional) receives the reply text as it is produced.
func (r *AssistantRun) Execute(ctx context.Context, onDelta func(string) error) (*agent.Outcome, error) {
	t := r.turn
	t.OnDelta = onDelta
	return r.turns.Run(ctx, t)
}
