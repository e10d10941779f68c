package webchat

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/converse"
	"switchboard/store"
)

// Visitor is the conversation a visitor token names for the deployment; ok is false when
// the token is not one this deployment issued. An empty token is a new visitor: "", true.
func (s *Service) Visitor(d store.WebchatDeployment, token string) (conversation string, ok bool) {
	if token == "" {
		return "", true
	}
	return s.tokens.Conversation(d.ID, token)
}

// ChatInput is a visitor's message.
type ChatInput struct {
	Message      string
	VisitorToken string // from an earlier reply; empty opens a conversation
	// OnToken, when set, streams: it receives the visitor's token before the reply, and
	// OnDelta the reply as it is produced.
	OnToken func(token string) error
	OnDelta func(text string) error
}

// Reply is the agent's answer to a visitor.
type Reply struct {
	VisitorToken string
	Reply        string
	Status       string
	Escalation   *converse.Escalation
}

// Chat runs a visitor's message as the turn POST /api/agents/{id}/chat runs, on the webchat
// channel. Every refusal comes before the turn, so none calls a model nor writes anything: a
// token of another deployment, a message out of bounds, a blocked visitor, a paused
// workspace, a disabled agent.
func (s *Service) Chat(ctx context.Context, d store.WebchatDeployment, in ChatInput) (Reply, error) {
	conversation, a, err := s.admit(ctx, d, in)
	if err != nil {
		return Reply{}, err
	}
	if s.agents == nil {
		return Reply{}, apierr.Internal(errors.New("webchat: the agent runtime is not wired"))
	}
	token := ""
	req := converse.Request{WorkspaceID: d.WorkspaceID, AgentID: d.AgentID, Message: in.Message,
		ConversationID: conversation, Channel: string(blueprint.ChannelWebchat), Agent: a}
	if in.OnToken != nil {
		req.OnConversation = func(id string) error {
			token = s.tokens.Issue(d.ID, id)
			return in.OnToken(token)
		}
		req.OnDelta = in.OnDelta
	}
	out, err := s.agents.Chat(ctx, req)
	if err != nil {
		return Reply{}, publicChatError(err)
	}
	if token == "" {
		token = s.tokens.Issue(d.ID, out.ConversationID)
	}
	return Reply{VisitorToken: token, Reply: out.Reply, Status: out.Status, Escalation: out.Escalation}, nil
}

// admit applies the rules a message passes before its turn, and returns the visitor's
// conversation ("" for a new visitor) and, for a new visitor, the deployment's agent as it
// read it (which the turn does not read again). A returning visitor's turn checks the agent
// itself (converse refuses a disabled agent before it writes anything, and keeps the agents
// it read: see converse.agentCache), so it is not read here.
func (s *Service) admit(ctx context.Context, d store.WebchatDeployment, in ChatInput) (string, *store.Agent, error) {
	conversation, ok := s.Visitor(d, in.VisitorToken)
	if !ok {
		return "", nil, apierr.Invalid("visitor_token", "visitor_token_invalid", "The visitor token is not one this chat issued; start a new conversation without it.")
	}
	if n := utf8.RuneCountInString(in.Message); strings.TrimSpace(in.Message) == "" || n > converse.MaxMessageChars {
		return "", nil, apierr.Invalid("message", "invalid_value", "message must be 1 to %d characters, and not only spaces.", converse.MaxMessageChars)
	}
	if err := s.refuseBlocked(ctx, d, conversation); err != nil {
		return "", nil, err
	}
	if err := Paused(d); err != nil {
		return "", nil, err
	}
	if conversation != "" {
		return conversation, nil, nil
	}
	a, _, err := s.agent(ctx, d)
	if err != nil {
		return "", nil, err
	}
	return conversation, &a, nil
}

// publicChatError keeps a turn's failure fit for a visitor: a disabled agent is
// "unavailable", and the management hints (update_agent, ...) are not shown.
func publicChatError(err error) error {
	e := apierr.As(err)
	if e == nil {
		return err
	}
	if e.Code == "agent_disabled" {
		return apierr.Conflict("agent_disabled", "This chat is unavailable right now.")
	}
	copied := *e
	copied.Hint = ""
	return &copied
}
