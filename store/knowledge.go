package store

import (
	"context"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

func toSource(s dbsqlc.AgentSourcesRow) Source {
	return Source{ID: s.ID, WorkspaceID: s.WorkspaceID, KnowledgeBaseID: s.KnowledgeBaseID, Type: s.Type, URL: s.URL,
		Depth: s.Depth, Status: s.Status, Error: s.Error, Pages: s.Pages, Path: s.Path, UploadID: s.UploadID, UploadShortID: s.UploadShortID}
}

// SourceByID returns a knowledge source of the workspace.
func (q *queries) SourceByID(ctx context.Context, workspaceID, id uuid.UUID) (Source, error) {
	s, err := q.sql.SourceByID(ctx, q.db, dbsqlc.SourceByIDParams{WorkspaceID: workspaceID, ID: id})
	return toSource(dbsqlc.AgentSourcesRow(s)), notFound("knowledge source", err)
}

// SetSourceStatus moves a source through its states: queued, crawling, ready or failed for a
// website crawl; pending, ready or failed for the other types.
func (q *queries) SetSourceStatus(ctx context.Context, workspaceID, id uuid.UUID, status string, errMsg *string, pages int) error {
	return q.sql.SetSourceStatus(ctx, q.db, dbsqlc.SetSourceStatusParams{WorkspaceID: workspaceID, ID: id, Status: status,
		Error: errMsg, Pages: pages})
}

// Chunk is a piece of extracted text.
type Chunk struct {
	URL, Title, Content string
}

// ReplaceChunks drops the chunks of a source from an earlier crawl; used when a crawl starts.
func (q *queries) ReplaceChunks(ctx context.Context, workspaceID, sourceID uuid.UUID) error {
	return q.sql.DeleteChunks(ctx, q.db, dbsqlc.DeleteChunksParams{WorkspaceID: workspaceID, SourceID: sourceID})
}

// AddChunks stores chunks of a source (one COPY).
func (q *queries) AddChunks(ctx context.Context, workspaceID, sourceID uuid.UUID, chunks []Chunk) error {
	rows := make([]dbsqlc.InsertChunksParams, len(chunks))
	for i, c := range chunks {
		rows[i] = dbsqlc.InsertChunksParams{WorkspaceID: workspaceID, SourceID: sourceID, URL: c.URL, Title: c.Title, Content: c.Content}
	}
	_, err := q.sql.InsertChunks(ctx, q.db, rows)
	return err
}

// SearchKnowledge finds the chunks of an agent's knowledge base that best match the query
// (PostgreSQL full-text search), best first.
func (q *queries) SearchKnowledge(ctx context.Context, workspaceID, agentID uuid.UUID, query string, limit int) ([]Chunk, error) {
	rows, err := q.sql.SearchKnowledge(ctx, q.db, dbsqlc.SearchKnowledgeParams{WorkspaceID: workspaceID, AgentID: agentID,
		Query: query, Max: limit})
	return mapRows(rows, func(r dbsqlc.SearchKnowledgeRow) Chunk { return Chunk(r) }), err
}

// AgentSources lists the sources of an agent's knowledge base, oldest first.
func (q *queries) AgentSources(ctx context.Context, workspaceID, agentID uuid.UUID) ([]Source, error) {
	rows, err := q.sql.AgentSources(ctx, q.db, dbsqlc.AgentSourcesParams{WorkspaceID: workspaceID, AgentID: agentID})
	return mapRows(rows, toSource), err
}
