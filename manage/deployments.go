package manage

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/blueprint"
	"switchboard/store"
)

// ListDeploymentsInput names the agent whose deployments are listed.
type ListDeploymentsInput struct {
	AgentID string `json:"agent_id" jsonschema:"format=uuid" jsonschema_description:"The agent's id."`
}

// DeploymentView is one deployment of an agent. A webchat deployment carries its embed
// script, the line to paste into a page, and the origins whose pages may use it.
type DeploymentView struct {
	DeploymentID string          `json:"deploymentId"`
	Channel      string          `json:"channel"`
	Config       json.RawMessage `json:"config"`
	// Webchat only: the loader script, the snippet for a page and config.allowed_origins
	// (empty: any origin).
	EmbedURL       *string  `json:"embedUrl,omitempty"`
	EmbedSnippet   *string  `json:"embedSnippet,omitempty"`
	AllowedOrigins []string `json:"allowedOrigins,omitempty"`
}

// ListDeploymentsResult is the deployments of an agent.
type ListDeploymentsResult struct {
	Success     bool             `json:"success"`
	AgentID     string           `json:"agentId"`
	Deployments []DeploymentView `json:"deployments"`
}

// ListDeployments lists an agent's deployments, one per channel type: the one the test link,
// get_agent's deployments and the channel runtime use (the oldest of a type).
func (s *Service) ListDeployments(ctx context.Context, ws uuid.UUID, in ListDeploymentsInput) (ListDeploymentsResult, error) {
	a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
	if err != nil {
		return ListDeploymentsResult{}, err
	}
	deployed, err := s.store.AgentDeployments(ctx, ws, a.ID)
	if err != nil {
		return ListDeploymentsResult{}, err
	}
	out := ListDeploymentsResult{Success: true, AgentID: a.ID.String(), Deployments: []DeploymentView{}}
	for typ, id := range deployed {
		d, err := s.store.DeploymentByID(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue // undeployed meanwhile
		}
		if err != nil {
			return ListDeploymentsResult{}, err
		}
		v := DeploymentView{DeploymentID: id.String(), Channel: typ, Config: d.Config}
		if len(v.Config) == 0 {
			v.Config = json.RawMessage(`{}`)
		}
		if typ == string(blueprint.ChannelWebchat) {
			embed := s.embedURL(id)
			snippet := EmbedSnippet(embed)
			v.EmbedURL, v.EmbedSnippet = &embed, &snippet
			// Read here, not with webchat.ParseConfig: webchat's rules build on this package
			// (disclosure, agent status), and the list is only shown.
			var cfg struct {
				AllowedOrigins []string `json:"allowed_origins"`
			}
			_ = json.Unmarshal(d.Config, &cfg)
			v.AllowedOrigins = nonNil(cfg.AllowedOrigins)
		}
		out.Deployments = append(out.Deployments, v)
	}
	sort.Slice(out.Deployments, func(i, j int) bool { return out.Deployments[i].Channel < out.Deployments[j].Channel })
	return out, nil
}

// EmbedSnippet is the line that shows a webchat deployment's widget on a page.
func EmbedSnippet(embedURL string) string {
	return `<script src="` + embedURL + `" async></script>`
}

// UndeployAgentInput names one deployment of an agent.
type UndeployAgentInput struct {
	AgentID      string `json:"agent_id" jsonschema:"format=uuid" jsonschema_description:"The agent's id."`
	DeploymentID string `json:"deployment_id" jsonschema:"format=uuid" jsonschema_description:"A deployment of the agent, as deploy_agent answers it."`
}

// UndeployAgentResult is the answer to undeploying one deployment.
type UndeployAgentResult struct {
	Success      bool   `json:"success"`
	DeploymentID string `json:"deploymentId"`
	Message      string `json:"message"`
}

// UndeployAgent removes one deployment of an agent: the agent stops receiving from that
// channel (a webchat embed script stops loading). It deletes what undeploy_agents deletes for
// one id, without parking a confirmation: the caller names the one deployment.
func (s *Service) UndeployAgent(ctx context.Context, ws uuid.UUID, in UndeployAgentInput) (UndeployAgentResult, error) {
	a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
	if err != nil {
		return UndeployAgentResult{}, err
	}
	id, err := parseID("deployment_id", in.DeploymentID)
	if err != nil {
		return UndeployAgentResult{}, err
	}
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		n, err := tx.DeleteDeployments(ctx, ws, store.BulkSet{Cutoff: time.Now().Add(time.Minute), ByIDs: true, IDs: []uuid.UUID{id}, AgentID: &a.ID}, 1)
		if err != nil {
			return err
		}
		if n == 0 {
			return apierr.NotFound("deployment_id", "deployment_not_found", "The agent has no deployment %q.", in.DeploymentID)
		}
		return audit.Record(ctx, tx, ws, audit.AgentUndeployed, "agent", a.ID.String(), map[string]any{"name": a.Name, "deployment_id": id})
	})
	if err != nil {
		return UndeployAgentResult{}, err
	}
	return UndeployAgentResult{Success: true, DeploymentID: id.String(), Message: a.Name + " is undeployed: deployment " + id.String() + " is gone."}, nil
}
