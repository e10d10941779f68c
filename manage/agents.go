package manage

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/blueprint"
	"switchboard/store"
)

// CreateAgentInput is create_agent's input: a full blueprint in YAML.
type CreateAgentInput struct {
	YAML string `json:"yaml" jsonschema:"minLength=1" jsonschema_description:"The full agent blueprint in YAML (top-level key agent). Schema: /schemas/blueprint.json"`
}

// CreateAgentResult is create_agent's result.
type CreateAgentResult struct {
	Success   bool     `json:"success"`
	AgentID   string   `json:"agentId"`
	AgentName string   `json:"agentName"`
	Status    string   `json:"status"`
	TestURL   string   `json:"testUrl"`
	Warnings  []string `json:"warnings"`
}

// CreateAgent validates the blueprint and stores the agent, its knowledge base and its
// sources; in the same transaction, website sources are queued for crawling and the others
// for ingestion (newSources says when a file source waits for its upload instead).
func (s *Service) CreateAgent(ctx context.Context, ws uuid.UUID, in CreateAgentInput) (CreateAgentResult, error) {
	if strings.TrimSpace(in.YAML) == "" {
		return CreateAgentResult{}, apierr.Invalid("yaml", "missing_blueprint", "yaml is required: the full agent blueprint.")
	}
	bp, err := blueprint.Parse([]byte(in.YAML), s.catalog)
	if err != nil {
		return CreateAgentResult{}, invalidBlueprint("yaml", err)
	}
	warnings := append(blueprint.Warnings(bp), blueprint.ModelWarnings(bp, s.catalog)...)
	if warnings == nil {
		warnings = []string{}
	}
	raw, err := json.Marshal(bp)
	if err != nil {
		return CreateAgentResult{}, err
	}
	sources, sourceWarnings, err := s.newSources(ctx, ws, bp)
	if err != nil {
		return CreateAgentResult{}, err
	}
	warnings = append(warnings, sourceWarnings...)
	var a store.Agent
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		var created []store.Source
		if a, created, err = tx.CreateAgent(ctx, ws, bp.Agent.Name, raw, sources); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, ws, audit.AgentCreated, "agent", a.ID.String(), map[string]any{"name": a.Name, "sources": len(created)}); err != nil {
			return err
		}
		jobs := sourceJobs(ws, created)
		if len(jobs) == 0 {
			return nil
		}
		_, err := s.jobs.InsertManyTx(ctx, tx.Pgx(), jobs)
		return err
	})
	if err != nil {
		return CreateAgentResult{}, err
	}
	return CreateAgentResult{Success: true, AgentID: a.ID.String(), AgentName: a.Name, Status: a.Status,
		TestURL: s.testURL(a.ID), Warnings: warnings}, nil
}

// AgentSummary is an agent as listed.
type AgentSummary struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	CreatedAt string `json:"createdAt"`
}

// ListAgentsInput is list_agents' input.
type ListAgentsInput struct {
	Status AgentStatus `json:"status,omitempty"`
}

// ListAgentsResult is list_agents' result.
type ListAgentsResult struct {
	Success bool           `json:"success"`
	Agents  []AgentSummary `json:"agents"`
	Total   int            `json:"total"`
}

// ListAgents lists the workspace's agents, newest first.
func (s *Service) ListAgents(ctx context.Context, ws uuid.UUID, in ListAgentsInput) (ListAgentsResult, error) {
	if in.Status != "" && !slices.Contains(AgentStatuses(), in.Status) {
		return ListAgentsResult{}, apierr.Invalid("status", "invalid_value", "status must be %s.", statusList())
	}
	list, err := s.store.ListAgents(ctx, ws, string(in.Status))
	if err != nil {
		return ListAgentsResult{}, err
	}
	out := ListAgentsResult{Success: true, Agents: []AgentSummary{}, Total: len(list)}
	for _, a := range list {
		out.Agents = append(out.Agents, AgentSummary{ID: a.ID.String(), Name: a.Name, Status: a.Status, CreatedAt: rfc3339(a.CreatedAt)})
	}
	return out, nil
}

// DeleteAgentInput is delete_agent's input.
type DeleteAgentInput struct {
	AgentID string `json:"agent_id" jsonschema:"format=uuid" jsonschema_description:"The agent's id."`
}

// AgentRef is the result of operations on one agent.
type AgentRef struct {
	Success   bool   `json:"success"`
	AgentID   string `json:"agentId"`
	AgentName string `json:"agentName"`
	// Warnings (update_agent) name valid but questionable settings, such as a model the
	// platform does not serve.
	Warnings []string `json:"warnings,omitempty"`
}

// deleteAttempts bounds the runs of an agent's delete that PostgreSQL aborts to break a
// deadlock.
const deleteAttempts = 3

// DeleteAgent removes the agent, its knowledge base and its deployments.
func (s *Service) DeleteAgent(ctx context.Context, ws uuid.UUID, in DeleteAgentInput) (AgentRef, error) {
	a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
	if err != nil {
		return AgentRef{}, err
	}
	// The delete locks the agent's conversations and campaigns before its row (store's
	// DeleteAgent); a conversation a campaign's worker opens while the delete waits for its
	// campaign is locked only by the cascade, after the campaign, and its send's record takes
	// them the other way: PostgreSQL then aborts one of the two, and the delete runs again.
	err = store.AgainIfDeadlocked(deleteAttempts, func() error {
		return s.store.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.DeleteAgent(ctx, ws, a.ID); err != nil {
				return err
			}
			return audit.Record(ctx, tx, ws, audit.AgentDeleted, "agent", a.ID.String(), map[string]any{"name": a.Name})
		})
	})
	if err != nil {
		return AgentRef{}, apierr.WithParam(err, "agent_id")
	}
	return AgentRef{Success: true, AgentID: a.ID.String(), AgentName: a.Name}, nil
}

// statusList is the agent states as an error message lists them ("enabled or disabled").
func statusList() string { return strings.Join(blueprint.Strings(AgentStatuses()), " or ") }
