-- name: SourceByID :one
SELECT s.id, s.workspace_id, s.knowledge_base_id, s.type, s.url, s.depth, s.status, s.error, s.pages,
    s.path, s.upload_id, u.short_id AS upload_short_id
FROM knowledge_sources s LEFT JOIN uploads u ON u.id = s.upload_id AND u.workspace_id = s.workspace_id
WHERE s.workspace_id = @workspace_id AND s.id = @id;

-- name: SetSourceStatus :exec
UPDATE knowledge_sources SET status = @status, error = sqlc.narg(error), pages = @pages, updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: DeleteChunks :exec
DELETE FROM knowledge_chunks WHERE workspace_id = @workspace_id AND source_id = @source_id;

-- name: InsertChunks :copyfrom
INSERT INTO knowledge_chunks (workspace_id, source_id, url, title, content)
VALUES (@workspace_id, @source_id, @url, @title, @content);

-- name: SearchKnowledge :many
-- SearchKnowledge ranks an agent's chunks by PostgreSQL full-text search, best first.
SELECT k.url, k.title, k.content FROM knowledge_chunks k
JOIN knowledge_sources s ON s.id = k.source_id
JOIN knowledge_bases b ON b.id = s.knowledge_base_id
WHERE k.workspace_id = @workspace_id AND b.agent_id = @agent_id
  AND k.tsv @@ websearch_to_tsquery('simple', @query::text)
ORDER BY ts_rank(k.tsv, websearch_to_tsquery('simple', @query::text)) DESC
LIMIT @max::int;

-- name: AgentSources :many
SELECT s.id, s.workspace_id, s.knowledge_base_id, s.type, s.url, s.depth, s.status, s.error, s.pages,
    s.path, s.upload_id, u.short_id AS upload_short_id
FROM knowledge_sources s JOIN knowledge_bases b ON b.id = s.knowledge_base_id
LEFT JOIN uploads u ON u.id = s.upload_id AND u.workspace_id = s.workspace_id
WHERE s.workspace_id = @workspace_id AND b.agent_id = @agent_id
ORDER BY s.created_at, s.id;
