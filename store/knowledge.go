package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SourceByID returns a knowledge source of the workspace.
func (s *Store) SourceByID(ctx context.Context, workspaceID, id uuid.UUID) (Source, error) {
	var src Source
	err := s.pool.QueryRow(ctx,
		`SELECT id, workspace_id, knowledge_base_id, type, url, depth, status, error, pages FROM knowledge_sources
		 WHERE workspace_id = $1 AND id = $2`, workspaceID, id).
		Scan(&src.ID, &src.WorkspaceID, &src.KnowledgeBaseID, &src.Type, &src.URL, &src.Depth, &src.Status, &src.Error, &src.Pages)
	return src, notFound(err)
}

// SetSourceStatus moves a source through queued, crawling, ready or failed.
func (s *Store) SetSourceStatus(ctx context.Context, workspaceID, id uuid.UUID, status string, errMsg *string, pages int) error {
	_, err := s.pool.Exec(ctx,
		`UPDATE knowledge_sources SET status = $3, error = $4, pages = $5, updated_at = now() WHERE workspace_id = $1 AND id = $2`,
		workspaceID, id, status, errMsg, pages)
	return err
}

// Chunk is a piece of extracted text.
type Chunk struct {
	URL, Title, Content string
}

// ReplaceChunks drops the chunks of a source from an earlier crawl; used when a crawl starts.
func (s *Store) ReplaceChunks(ctx context.Context, workspaceID, sourceID uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM knowledge_chunks WHERE workspace_id = $1 AND source_id = $2`, workspaceID, sourceID)
	return err
}

// AddChunks stores chunks of a source.
func (s *Store) AddChunks(ctx context.Context, workspaceID, sourceID uuid.UUID, chunks []Chunk) error {
	rows := make([][]any, len(chunks))
	for i, c := range chunks {
		rows[i] = []any{workspaceID, sourceID, c.URL, c.Title, c.Content}
	}
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"knowledge_chunks"}, []string{"workspace_id", "source_id", "url", "title", "content"}, pgx.CopyFromRows(rows))
	return err
}

// SearchKnowledge finds the chunks of an agent's knowledge base that best match the query
// (PostgreSQL full-text search), best first.
func (s *Store) SearchKnowledge(ctx context.Context, workspaceID, agentID uuid.UUID, query string, limit int) ([]Chunk, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT k.url, k.title, k.content FROM knowledge_chunks k
		 JOIN knowledge_sources s ON s.id = k.source_id
		 JOIN knowledge_bases b ON b.id = s.knowledge_base_id
		 WHERE k.workspace_id = $1 AND b.agent_id = $2 AND k.tsv @@ websearch_to_tsquery('simple', $3)
		 ORDER BY ts_rank(k.tsv, websearch_to_tsquery('simple', $3)) DESC LIMIT $4`, workspaceID, agentID, query, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Chunk, error) {
		var c Chunk
		err := r.Scan(&c.URL, &c.Title, &c.Content)
		return c, err
	})
}

// AgentSources lists the sources of an agent's knowledge base, oldest first.
func (s *Store) AgentSources(ctx context.Context, workspaceID, agentID uuid.UUID) ([]Source, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT s.id, s.workspace_id, s.knowledge_base_id, s.type, s.url, s.depth, s.status, s.error, s.pages
		 FROM knowledge_sources s JOIN knowledge_bases b ON b.id = s.knowledge_base_id
		 WHERE s.workspace_id = $1 AND b.agent_id = $2 ORDER BY s.created_at, s.id`, workspaceID, agentID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Source, error) {
		var src Source
		err := r.Scan(&src.ID, &src.WorkspaceID, &src.KnowledgeBaseID, &src.Type, &src.URL, &src.Depth, &src.Status, &src.Error, &src.Pages)
		return src, err
	})
}
