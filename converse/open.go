package converse

import (
	"context"
	"encoding/json"
	"fmt"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/manage"
)

// Open opens a conversation of the agent before anyone says anything, as a phone call does:
// its greeting and disclosure are stored as they are spoken, and the caller's words come
// with Chat (ConversationID) afterwards. req.Message is not used.
func (s *Service) Open(ctx context.Context, req Request) (string, error) {
	a, err := s.store.AgentByID(ctx, req.WorkspaceID, req.AgentID)
	if err != nil {
		return "", apierr.WithParam(err, "id")
	}
	if a.Status != string(manage.AgentEnabled) {
		return "", apierr.Conflict("agent_disabled", "The agent %q is disabled, so it does not reply.", a.Name)
	}
	var bp blueprint.Blueprint
	if err := json.Unmarshal(a.Blueprint, &bp); err != nil {
		return "", fmt.Errorf("stored blueprint of agent %s: %w", a.ID, err)
	}
	req.ConversationID, req.Message = "", "" // no turn: no history, no search
	st, err := s.conversation(ctx, a, &bp, req, nil, 0, 0)
	return st.conv.ShortID, err
}

// withInstructions adds a channel's instructions to the system prompt.
func withInstructions(system, instructions string) string {
	if instructions == "" {
		return system
	}
	return system + "\n\n## Channel\n" + instructions
}
