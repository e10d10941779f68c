package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// Agent is a stored agent.
type Agent struct {
	ID                    uuid.UUID
	WorkspaceID           uuid.UUID
	Name                  string
	Status                string
	Blueprint             json.RawMessage
	DisclosureEnabled     bool
	DisclosureText        *string
	DisclosureRecordingID *uuid.UUID
	CreatedAt             time.Time
	UpdatedAt             time.Time
}

// agent converts a row, and a missing row into not-found.
func agent(a dbsqlc.Agent, err error) (Agent, error) {
	if err != nil {
		return Agent{}, notFound("agent", err)
	}
	return toAgent(a), nil
}

func toAgent(a dbsqlc.Agent) Agent {
	return Agent{ID: a.ID, WorkspaceID: a.WorkspaceID, Name: a.Name, Status: a.Status, Blueprint: a.Blueprint,
		DisclosureEnabled: a.DisclosureEnabled, DisclosureText: a.DisclosureText, DisclosureRecordingID: a.DisclosureRecordingID,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

// NewSource is a knowledge source to record with an agent.
type NewSource struct {
	Type     string
	URL      string
	Depth    int
	Path     string
	Status   string
	Error    *string
	UploadID *uuid.UUID // the upload a file source reads, once known
	Text     string     // a manual_text source's text
}

// Source is a stored knowledge source.
type Source struct {
	ID              uuid.UUID
	WorkspaceID     uuid.UUID
	KnowledgeBaseID uuid.UUID
	Type            string
	URL             *string
	Depth           *int
	Status          string
	Error           *string
	Pages           int
	Path            *string    // the upload filename a file source names
	UploadID        *uuid.UUID // the upload a file source reads, once known
	UploadShortID   *string    // its public id (upl_…)
}

// CreateAgent stores an agent with its knowledge base and sources; it returns the agent and
// the sources, in the order given.
func (q *queries) CreateAgent(ctx context.Context, workspaceID uuid.UUID, name string, blueprint json.RawMessage, sources []NewSource) (Agent, []Source, error) {
	a, err := agent(q.sql.CreateAgent(ctx, q.db, dbsqlc.CreateAgentParams{WorkspaceID: workspaceID, Name: name, Blueprint: blueprint}))
	if err != nil {
		return a, nil, err
	}
	kb, err := q.sql.CreateKnowledgeBase(ctx, q.db, dbsqlc.CreateKnowledgeBaseParams{WorkspaceID: workspaceID, AgentID: a.ID})
	if err != nil {
		return a, nil, err
	}
	var out []Source
	for _, s := range sources {
		src, err := q.AddSource(ctx, workspaceID, kb, s)
		if err != nil {
			return a, nil, err
		}
		out = append(out, src)
	}
	return a, out, nil
}

// AddSource records a knowledge source.
func (q *queries) AddSource(ctx context.Context, workspaceID, knowledgeBaseID uuid.UUID, s NewSource) (Source, error) {
	src := Source{WorkspaceID: workspaceID, KnowledgeBaseID: knowledgeBaseID, Type: s.Type, Status: s.Status, Error: s.Error,
		UploadID: s.UploadID}
	if s.URL != "" {
		src.URL = &s.URL
	}
	if s.Depth > 0 {
		src.Depth = &s.Depth
	}
	if s.Path != "" {
		src.Path = &s.Path
	}
	var text *string
	if s.Text != "" {
		text = &s.Text
	}
	id, err := q.sql.AddSource(ctx, q.db, dbsqlc.AddSourceParams{WorkspaceID: workspaceID, KnowledgeBaseID: knowledgeBaseID,
		Type: s.Type, URL: src.URL, Depth: src.Depth, Path: s.Path, Status: s.Status, Error: s.Error, UploadID: s.UploadID, Text: text})
	src.ID = id
	return src, err
}

// KnowledgeBaseOf returns the id of an agent's knowledge base.
func (q *queries) KnowledgeBaseOf(ctx context.Context, workspaceID, agentID uuid.UUID) (uuid.UUID, error) {
	id, err := q.sql.KnowledgeBaseOf(ctx, q.db, dbsqlc.KnowledgeBaseOfParams{WorkspaceID: workspaceID, AgentID: agentID})
	return id, notFound("knowledge base", err)
}

// AgentByID returns an agent of the workspace.
func (q *queries) AgentByID(ctx context.Context, workspaceID, id uuid.UUID) (Agent, error) {
	return agent(q.sql.AgentByID(ctx, q.db, dbsqlc.AgentByIDParams{WorkspaceID: workspaceID, ID: id}))
}

// AgentByIDVersioned returns an agent of the workspace with its row's version (see
// AgentTurn.AgentVersion): a copy kept in memory is current while the version read with the
// conversation's state (AgentTurnState) is the same.
func (q *queries) AgentByIDVersioned(ctx context.Context, workspaceID, id uuid.UUID) (Agent, int64, error) {
	r, err := q.sql.AgentByIDVersioned(ctx, q.db, dbsqlc.AgentByIDVersionedParams{WorkspaceID: workspaceID, ID: id})
	a, err := agent(r.Agent, err)
	return a, r.Version, err
}

// AgentsNamed finds the workspace's agents whose name contains name, ignoring case.
func (q *queries) AgentsNamed(ctx context.Context, workspaceID uuid.UUID, name string) ([]Agent, error) {
	rows, err := q.sql.AgentsNamed(ctx, q.db, dbsqlc.AgentsNamedParams{WorkspaceID: workspaceID, Pattern: escapeLike(name)})
	return mapRows(rows, toAgent), err
}

// ListAgents lists the workspace's agents, newest first, optionally of one status.
func (q *queries) ListAgents(ctx context.Context, workspaceID uuid.UUID, status string) ([]Agent, error) {
	rows, err := q.sql.ListAgents(ctx, q.db, dbsqlc.ListAgentsParams{WorkspaceID: workspaceID, Status: status})
	return mapRows(rows, toAgent), err
}

func escapeLike(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '%' || r == '_' || r == '\\' {
			out = append(out, '\\')
		}
		out = append(out, r)
	}
	return string(out)
}

// AgentUpdate is a validated change to an agent.
type AgentUpdate struct {
	Name                  string
	Status                string
	Blueprint             json.RawMessage
	DisclosureEnabled     bool
	DisclosureText        *string
	DisclosureRecordingID *uuid.UUID
}

// UpdateAgent writes an agent's new state.
func (q *queries) UpdateAgent(ctx context.Context, workspaceID, id uuid.UUID, u AgentUpdate) (Agent, error) {
	return agent(q.sql.UpdateAgent(ctx, q.db, dbsqlc.UpdateAgentParams{WorkspaceID: workspaceID, ID: id, Name: u.Name, Status: u.Status,
		Blueprint: u.Blueprint, DisclosureEnabled: u.DisclosureEnabled, DisclosureText: u.DisclosureText,
		DisclosureRecordingID: u.DisclosureRecordingID}))
}

// DeleteAgent removes an agent; its knowledge base, sources, chunks, deployments and
// conversations go with it (foreign keys cascade).
//
// Its conversations (deleted with it) are locked first, in id order, then its campaigns
// (unlinked), then the agent's row: the delete's cascades would take them after the agent's
// row, each in its index's order, against the group commit's order of conversations and a
// campaign worker's (its campaign, then the agent's KEY SHARE).
func (q *queries) DeleteAgent(ctx context.Context, workspaceID, id uuid.UUID) error {
	return q.inTx(ctx, func(q *queries) error {
		if err := q.sql.LockAgentConversations(ctx, q.db, dbsqlc.LockAgentConversationsParams{WorkspaceID: workspaceID, AgentID: &id}); err != nil {
			return err
		}
		if err := q.sql.LockAgentCampaigns(ctx, q.db, dbsqlc.LockAgentCampaignsParams{WorkspaceID: workspaceID, AgentID: &id}); err != nil {
			return err
		}
		n, err := q.sql.DeleteAgent(ctx, q.db, dbsqlc.DeleteAgentParams{WorkspaceID: workspaceID, ID: id})
		return affected("agent", n, err)
	})
}

// RecordingKind returns the kind of a recording of the workspace.
func (q *queries) RecordingKind(ctx context.Context, workspaceID, id uuid.UUID) (string, error) {
	kind, err := q.sql.RecordingKind(ctx, q.db, dbsqlc.RecordingKindParams{WorkspaceID: workspaceID, ID: id})
	return kind, notFound("recording", err)
}

// CreateRecording stores a recording's record (the audio itself lives elsewhere).
func (q *queries) CreateRecording(ctx context.Context, workspaceID uuid.UUID, kind, name string) (uuid.UUID, error) {
	return q.sql.CreateRecording(ctx, q.db, dbsqlc.CreateRecordingParams{WorkspaceID: workspaceID, Kind: kind, Name: name})
}

// ConversationSummary is a conversation as listed for an agent.
type ConversationSummary struct {
	ID        string
	Status    string
	Channel   string
	Labels    []string
	CreatedAt time.Time
}

// AgentConversations lists an agent's most recent conversations and counts all of them.
func (q *queries) AgentConversations(ctx context.Context, workspaceID, agentID uuid.UUID, limit int) ([]ConversationSummary, int, error) {
	total, err := q.sql.CountAgentConversations(ctx, q.db, dbsqlc.CountAgentConversationsParams{WorkspaceID: workspaceID, AgentID: agentID})
	if err != nil {
		return nil, 0, err
	}
	rows, err := q.sql.AgentConversations(ctx, q.db, dbsqlc.AgentConversationsParams{WorkspaceID: workspaceID, AgentID: agentID, Max: limit})
	return mapRows(rows, func(r dbsqlc.AgentConversationsRow) ConversationSummary {
		return ConversationSummary{ID: r.ShortID, Status: r.Status, Channel: r.Channel, Labels: r.Labels, CreatedAt: r.CreatedAt}
	}), int(total), err
}

// AgentLabelCounts counts an agent's conversations and how many carry each label.
func (q *queries) AgentLabelCounts(ctx context.Context, workspaceID, agentID uuid.UUID) (int, map[string]int, error) {
	total, err := q.sql.CountAgentConversations(ctx, q.db, dbsqlc.CountAgentConversationsParams{WorkspaceID: workspaceID, AgentID: agentID})
	if err != nil {
		return 0, nil, err
	}
	rows, err := q.sql.AgentLabelCounts(ctx, q.db, dbsqlc.AgentLabelCountsParams{WorkspaceID: workspaceID, AgentID: agentID})
	if err != nil {
		return 0, nil, err
	}
	counts := make(map[string]int, len(rows))
	for _, r := range rows {
		counts[r.Label] = int(r.Count)
	}
	return int(total), counts, nil
}

// AgentRuleAnswers counts the agent's turns that rule (a turn.completed's handled_by, such
// as "after_hours") answered since a time.
func (q *queries) AgentRuleAnswers(ctx context.Context, workspaceID, agentID uuid.UUID, rule string, since time.Time) (int, error) {
	return q.sql.AgentRuleAnswers(ctx, q.db, dbsqlc.AgentRuleAnswersParams{WorkspaceID: workspaceID,
		Since: since, AgentID: agentID.String(), Rule: rule})
}

// CreateAgentConversation opens a conversation of an agent on a channel (for channel bridges
// and tests; the /v1 surfaces open conversations of the builder assistant).
func (q *queries) CreateAgentConversation(ctx context.Context, workspaceID, agentID uuid.UUID, channel string, labels []string) (string, error) {
	if labels == nil {
		labels = []string{}
	}
	var short string
	err := q.inTx(ctx, func(q *queries) error {
		c, err := q.CreateConversation(ctx, workspaceID, channel)
		if err != nil {
			return err
		}
		short = c.ShortID
		return q.sql.SetConversationAgent(ctx, q.db, dbsqlc.SetConversationAgentParams{ID: c.ID, AgentID: &agentID, Labels: labels})
	})
	return short, err
}

// AgentByIDAnyWorkspace returns an agent by its UUID alone. Only the public test page uses
// it: there the unguessable id is the capability, handed out by generate_test_link.
func (q *queries) AgentByIDAnyWorkspace(ctx context.Context, id uuid.UUID) (Agent, error) {
	return agent(q.sql.AgentByIDAnyWorkspace(ctx, q.db, id))
}
