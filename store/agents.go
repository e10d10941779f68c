package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

const agentColumns = `id, workspace_id, name, status, blueprint, disclosure_enabled, disclosure_text, disclosure_recording_id, created_at, updated_at`

func scanAgent(row interface{ Scan(...any) error }) (Agent, error) {
	var a Agent
	var bp []byte
	err := row.Scan(&a.ID, &a.WorkspaceID, &a.Name, &a.Status, &bp, &a.DisclosureEnabled, &a.DisclosureText,
		&a.DisclosureRecordingID, &a.CreatedAt, &a.UpdatedAt)
	a.Blueprint = bp
	return a, notFound(err)
}

// NewSource is a knowledge source to record with an agent.
type NewSource struct {
	Type   string
	URL    string
	Depth  int
	Path   string
	Status string
	Error  *string
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
}

// CreateAgent stores an agent with its knowledge base and sources; it returns the agent and
// the sources, in the order given.
func (t *Tx) CreateAgent(ctx context.Context, workspaceID uuid.UUID, name string, blueprint json.RawMessage, sources []NewSource) (Agent, []Source, error) {
	a, err := scanAgent(t.tx.QueryRow(ctx,
		`INSERT INTO agents (workspace_id, name, blueprint) VALUES ($1, $2, $3) RETURNING `+agentColumns,
		workspaceID, name, string(blueprint)))
	if err != nil {
		return a, nil, err
	}
	var kb uuid.UUID
	if err := t.tx.QueryRow(ctx, `INSERT INTO knowledge_bases (workspace_id, agent_id) VALUES ($1, $2) RETURNING id`,
		workspaceID, a.ID).Scan(&kb); err != nil {
		return a, nil, err
	}
	var out []Source
	for _, s := range sources {
		src, err := t.AddSource(ctx, workspaceID, kb, s)
		if err != nil {
			return a, nil, err
		}
		out = append(out, src)
	}
	return a, out, nil
}

// AddSource records a knowledge source.
func (t *Tx) AddSource(ctx context.Context, workspaceID, knowledgeBaseID uuid.UUID, s NewSource) (Source, error) {
	src := Source{WorkspaceID: workspaceID, KnowledgeBaseID: knowledgeBaseID, Type: s.Type, Status: s.Status, Error: s.Error}
	var url *string
	var depth *int
	if s.URL != "" {
		url = &s.URL
	}
	if s.Depth > 0 {
		depth = &s.Depth
	}
	src.URL, src.Depth = url, depth
	err := t.tx.QueryRow(ctx,
		`INSERT INTO knowledge_sources (workspace_id, knowledge_base_id, type, url, depth, path, status, error)
		 VALUES ($1, $2, $3, $4, $5, nullif($6, ''), $7, $8) RETURNING id`,
		workspaceID, knowledgeBaseID, s.Type, url, depth, s.Path, s.Status, s.Error).Scan(&src.ID)
	return src, err
}

// KnowledgeBaseOf returns the id of an agent's knowledge base.
func (s *Store) KnowledgeBaseOf(ctx context.Context, workspaceID, agentID uuid.UUID) (uuid.UUID, error) {
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT id FROM knowledge_bases WHERE workspace_id = $1 AND agent_id = $2`, workspaceID, agentID).Scan(&id)
	return id, notFound(err)
}

// AgentByID returns an agent of the workspace.
func (s *Store) AgentByID(ctx context.Context, workspaceID, id uuid.UUID) (Agent, error) {
	return scanAgent(s.pool.QueryRow(ctx, `SELECT `+agentColumns+` FROM agents WHERE workspace_id = $1 AND id = $2`, workspaceID, id))
}

// AgentsNamed finds the workspace's agents whose name contains name, ignoring case.
func (s *Store) AgentsNamed(ctx context.Context, workspaceID uuid.UUID, name string) ([]Agent, error) {
	return s.agents(ctx, `SELECT `+agentColumns+` FROM agents WHERE workspace_id = $1 AND name ILIKE '%' || $2 || '%' ESCAPE '\'
		ORDER BY created_at DESC, id`, workspaceID, escapeLike(name))
}

// ListAgents lists the workspace's agents, newest first, optionally of one status.
func (s *Store) ListAgents(ctx context.Context, workspaceID uuid.UUID, status string) ([]Agent, error) {
	return s.agents(ctx, `SELECT `+agentColumns+` FROM agents WHERE workspace_id = $1 AND ($2 = '' OR status = $2)
		ORDER BY created_at DESC, id`, workspaceID, status)
}

func (s *Store) agents(ctx context.Context, query string, args ...any) ([]Agent, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Agent, error) { return scanAgent(r) })
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
func (s *Store) UpdateAgent(ctx context.Context, workspaceID, id uuid.UUID, u AgentUpdate) (Agent, error) {
	return scanAgent(s.pool.QueryRow(ctx,
		`UPDATE agents SET name = $3, status = $4, blueprint = $5, disclosure_enabled = $6, disclosure_text = $7,
			disclosure_recording_id = $8, updated_at = now()
		 WHERE workspace_id = $1 AND id = $2 RETURNING `+agentColumns,
		workspaceID, id, u.Name, u.Status, string(u.Blueprint), u.DisclosureEnabled, u.DisclosureText, u.DisclosureRecordingID))
}

// DeleteAgent removes an agent; its knowledge base, sources, chunks, deployments and
// conversations go with it (foreign keys cascade).
func (s *Store) DeleteAgent(ctx context.Context, workspaceID, id uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM agents WHERE workspace_id = $1 AND id = $2`, workspaceID, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// RecordingKind returns the kind of a recording of the workspace.
func (s *Store) RecordingKind(ctx context.Context, workspaceID, id uuid.UUID) (string, error) {
	var kind string
	err := s.pool.QueryRow(ctx, `SELECT kind FROM recordings WHERE workspace_id = $1 AND id = $2`, workspaceID, id).Scan(&kind)
	return kind, notFound(err)
}

// CreateRecording stores a recording's record (the audio itself lives elsewhere).
func (s *Store) CreateRecording(ctx context.Context, workspaceID uuid.UUID, kind, name string) (uuid.UUID, error) {
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `INSERT INTO recordings (workspace_id, kind, name) VALUES ($1, $2, $3) RETURNING id`,
		workspaceID, kind, name).Scan(&id)
	return id, err
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
func (s *Store) AgentConversations(ctx context.Context, workspaceID, agentID uuid.UUID, limit int) ([]ConversationSummary, int, error) {
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM conversations WHERE workspace_id = $1 AND agent_id = $2`,
		workspaceID, agentID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.pool.Query(ctx,
		`SELECT short_id, status, channel, labels, created_at FROM conversations
		 WHERE workspace_id = $1 AND agent_id = $2 ORDER BY created_at DESC, id LIMIT $3`, workspaceID, agentID, limit)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ConversationSummary, error) {
		var c ConversationSummary
		err := r.Scan(&c.ID, &c.Status, &c.Channel, &c.Labels, &c.CreatedAt)
		return c, err
	})
	return list, total, err
}

// AgentLabelCounts counts an agent's conversations and how many carry each label.
func (s *Store) AgentLabelCounts(ctx context.Context, workspaceID, agentID uuid.UUID) (int, map[string]int, error) {
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM conversations WHERE workspace_id = $1 AND agent_id = $2`,
		workspaceID, agentID).Scan(&total); err != nil {
		return 0, nil, err
	}
	rows, err := s.pool.Query(ctx,
		`SELECT label, count(*) FROM conversations, unnest(labels) AS label
		 WHERE workspace_id = $1 AND agent_id = $2 GROUP BY label`, workspaceID, agentID)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var label string
		var n int
		if err := rows.Scan(&label, &n); err != nil {
			return 0, nil, err
		}
		counts[label] = n
	}
	return total, counts, rows.Err()
}

// CreateAgentConversation opens a conversation of an agent on a channel (for channel bridges
// and tests; the /v1 surfaces open conversations of the builder assistant).
func (s *Store) CreateAgentConversation(ctx context.Context, workspaceID, agentID uuid.UUID, channel string, labels []string) (string, error) {
	if labels == nil {
		labels = []string{}
	}
	var short string
	err := s.InTx(ctx, func(tx *Tx) error {
		c, err := tx.CreateConversation(ctx, workspaceID, channel)
		if err != nil {
			return err
		}
		short = c.ShortID
		_, err = tx.tx.Exec(ctx, `UPDATE conversations SET agent_id = $2, labels = $3 WHERE id = $1`, c.ID, agentID, labels)
		return err
	})
	return short, err
}

// AgentByIDAnyWorkspace returns an agent by its UUID alone. Only the public test page uses
// it: there the unguessable id is the capability, handed out by generate_test_link.
func (s *Store) AgentByIDAnyWorkspace(ctx context.Context, id uuid.UUID) (Agent, error) {
	return scanAgent(s.pool.QueryRow(ctx, `SELECT `+agentColumns+` FROM agents WHERE id = $1`, id))
}
