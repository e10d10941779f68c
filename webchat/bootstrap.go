package webchat

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/converse"
	"switchboard/manage"
	"switchboard/store"
)

// Bootstrap is what the widget shows before the first message.
type Bootstrap struct {
	DisplayName string // the persona's, else the agent's name
	Greeting    string
	Language    string
	Disclosure  *string // the AI disclosure, when it applies on webchat
	// Available is false when the workspace may not spend now (Paused): the widget says the
	// chat is paused, with Unavailable as the reason.
	Available       bool
	Unavailable     *string
	MaxMessageChars int
}

// Bootstrap answers GET /embed/{deploymentId}/config: a disabled agent is 409, a paused
// workspace still answers (available: false).
func (s *Service) Bootstrap(ctx context.Context, d store.WebchatDeployment) (Bootstrap, error) {
	a, bp, err := s.agent(ctx, d)
	if err != nil {
		return Bootstrap{}, err
	}
	out, err := s.persona(ctx, a, bp)
	if err != nil {
		return Bootstrap{}, err
	}
	if err := Paused(d); err != nil {
		msg := apierr.As(err).Message
		out.Available, out.Unavailable = false, &msg
	}
	return out, nil
}

// TestPage is what an agent's test page shows: the agent, and the bootstrap its webchat
// widget would get (available: the page chats through /api, with a key).
type TestPage struct {
	Agent store.Agent
	Bootstrap
}

// TestPage finds the agent of a test link by its id alone (the unguessable id is the
// capability to see the page), enabled or not: the page says when it does not reply.
func (s *Service) TestPage(ctx context.Context, id string) (TestPage, error) {
	notFound := apierr.NotFound("id", "agent_not_found", "No such agent.")
	uid, err := uuid.Parse(id)
	if err != nil {
		return TestPage{}, notFound
	}
	a, err := s.store.AgentByIDAnyWorkspace(ctx, uid)
	if errors.Is(err, store.ErrNotFound) {
		return TestPage{}, notFound
	}
	if err != nil {
		return TestPage{}, err
	}
	bp, err := blueprintOf(a)
	if err != nil {
		return TestPage{}, err
	}
	b, err := s.persona(ctx, a, bp)
	return TestPage{Agent: a, Bootstrap: b}, err
}

// persona is the bootstrap of an agent, available.
func (s *Service) persona(ctx context.Context, a store.Agent, bp *blueprint.Blueprint) (Bootstrap, error) {
	out := Bootstrap{DisplayName: bp.Agent.Persona.DisplayName, Greeting: bp.Agent.Persona.Greeting,
		Language: bp.Agent.Language, Available: true, MaxMessageChars: converse.MaxMessageChars}
	if out.DisplayName == "" {
		out.DisplayName = a.Name
	}
	deployed, err := s.store.AgentDeployments(ctx, a.WorkspaceID, a.ID)
	if err != nil {
		return Bootstrap{}, err
	}
	if disc := manage.DisclosureFor(a, bp, deployed, string(blueprint.ChannelWebchat)); disc.Applies {
		text := disc.SpokenText
		out.Disclosure = &text
	}
	return out, nil
}
