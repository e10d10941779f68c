package webchat

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/converse"
	"switchboard/manage"
	"switchboard/quota"
	"switchboard/store"
)

// Service decides what the public webchat routes and the agent's test page answer, so that
// the embed routes, the visitor's stream and the test page apply one set of rules:
//   - a deployment is found by its id alone, and only a webchat one (the id is public: it is
//     in the embed line);
//   - its config.allowed_origins names the pages that may use it (CheckOrigin);
//   - a disabled agent does not take messages, nor does a workspace that may not spend now
//     (quota.Refusal): the bootstrap says the chat is paused instead;
//   - a visitor is their conversation, named by a token the service signed; a blocked one
//     is refused.
//
// Visitors see none of the management details (balances, caps, hints).
type Service struct {
	store  *store.Store
	tokens *Tokens
	agents *converse.Service
	own    string
}

// NewService returns the webchat rules over st. tokens signs the visitor tokens; agents runs
// the turns (nil in processes that serve no chat: Chat then fails); own is the server's
// public origin (PUBLIC_BASE_URL), whose pages may always use the widget.
func NewService(st *store.Store, tokens *Tokens, agents *converse.Service, own string) *Service {
	return &Service{store: st, tokens: tokens, agents: agents, own: own}
}

// Deployment returns the webchat deployment of id (the path's text): an id that is no UUID,
// unknown, or of another channel is 404 deployment_not_found, alike, so that a visitor cannot
// tell a voice deployment from no deployment. visitorToken is the token the request carries
// ("" for none): when this deployment issued it, the same statement reads whether its visitor
// is blocked, and refuseBlocked reads nothing more.
func (s *Service) Deployment(ctx context.Context, id, visitorToken string) (store.WebchatDeployment, error) {
	notFound := apierr.NotFound("id", "deployment_not_found", "No such webchat deployment.")
	uid, err := uuid.Parse(id)
	if err != nil {
		return store.WebchatDeployment{}, notFound
	}
	visitor := ""
	if visitorToken != "" {
		visitor, _ = s.tokens.Conversation(uid, visitorToken)
	}
	d, err := s.store.WebchatDeploymentByID(ctx, uid, visitor)
	if errors.Is(err, store.ErrNotFound) || (err == nil && d.ChannelType != string(blueprint.ChannelWebchat)) {
		return d, notFound
	}
	return d, err
}

// Loader is the loader script of the embed line of deployment id. Any deployment of the id
// has one (as it always had); the routes it calls then refuse other channels.
func (s *Service) Loader(ctx context.Context, id uuid.UUID) ([]byte, error) {
	if _, _, err := s.store.DeploymentAgent(ctx, id); errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("id", "deployment_not_found", "No such deployment.")
	} else if err != nil {
		return nil, err
	}
	return Loader(s.own, id), nil
}

// Paused is the visitor's side of the workspace's budget rules: a workspace that may not
// spend now (quota.Refusal: suspended, no credit, or its monthly spend cap reached) takes no
// message, 403 insufficient_quota whatever the reason, so visitors learn nothing of it.
func Paused(d store.WebchatDeployment) error {
	w := store.Workspace{ID: d.WorkspaceID, Name: d.WorkspaceName, Status: d.WorkspaceStatus, BalanceNanoUSD: d.BalanceNanoUSD,
		MonthlyCapNanoUSD: d.MonthlyCapNanoUSD, MonthSpendNanoUSD: d.MonthSpendNanoUSD}
	if quota.Refusal(w) != "" {
		return apierr.Quota("This chat is paused right now. Please try again later.")
	}
	return nil
}

// agent is the deployment's agent, when it replies: a disabled agent is 409 agent_disabled.
func (s *Service) agent(ctx context.Context, d store.WebchatDeployment) (store.Agent, *blueprint.Blueprint, error) {
	a, err := s.store.AgentByID(ctx, d.WorkspaceID, d.AgentID)
	if err != nil {
		return a, nil, apierr.WithParam(err, "id")
	}
	if a.Status != string(manage.AgentEnabled) {
		return a, nil, apierr.Conflict("agent_disabled", "This chat is unavailable right now.")
	}
	bp, err := blueprintOf(a)
	return a, bp, err
}

func blueprintOf(a store.Agent) (*blueprint.Blueprint, error) {
	var bp blueprint.Blueprint
	if err := json.Unmarshal(a.Blueprint, &bp); err != nil {
		return nil, err
	}
	return &bp, nil
}
