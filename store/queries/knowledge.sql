-- name: SourceByID :one
SELECT s.id, s.workspace_id, s.knowledge_base_id, s.type, s.url, s.depth, s.status, s.error, s.pages,
    s.path, s.upload_id, u.short_id AS upload_short_id
FROM knowledge_sources s LEFT JOIN uploads u ON u.id = s.upload_id AND u.workspace_id = s.workspace_id
WHERE s.workspace_id = @workspace_id AND s.id = @id;

-- name: SetSourceStatus :exec
UPDATE knowledge_sources SET status = @status, error = sqlc.narg(error), pages = @pages, updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: DeleteChunks :exec
-- DeleteChunks deletes a source's chunks, its knowledge base's row locked first (the
-- uncorrelated EXISTS runs once, before the first row is deleted): the delete's trigger counts
-- a new generation on that row after the chunks (migration 0040), while a change of the
-- agent's language updates the row, then every chunk (0029), and a delete of the agent takes
-- the row before its sources' chunks. Locked first, each waits for the other instead.
DELETE FROM knowledge_chunks k WHERE k.workspace_id = @workspace_id AND k.source_id = @source_id
  AND EXISTS (SELECT 1 FROM knowledge_bases b JOIN knowledge_sources s ON s.knowledge_base_id = b.id
              WHERE s.workspace_id = @workspace_id::uuid AND s.id = @source_id::uuid
              FOR NO KEY UPDATE OF b);

-- name: InsertChunks :copyfrom
INSERT INTO knowledge_chunks (workspace_id, source_id, url, title, content)
VALUES (@workspace_id, @source_id, @url, @title, @content);

-- name: CleanKnowledgePending :exec
-- CleanKnowledgePending merges the knowledge indexes' pending lists into them (migration 0034).
SELECT knowledge_clean_pending();

-- name: KnowledgeSearchPlan :one
-- KnowledgeSearchPlan is what a search of an agent's knowledge needs before it looks: its
-- sources, and the query's lexemes in the knowledge base's language (stemmed, stop words out),
-- with the knowledge base and its generation (migration 0040) for a search kept in memory.
SELECT coalesce((SELECT array_agg(s.id) FROM knowledge_sources s WHERE s.knowledge_base_id = b.id), '{}')::uuid[] AS sources,
    tsvector_to_array(to_tsvector(b.ts_config, @query::text))::text[] AS lexemes, b.id, b.generation
FROM knowledge_bases b WHERE b.workspace_id = @workspace_id AND b.agent_id = @agent_id;

-- name: SearchKnowledgeTier :many
-- SearchKnowledgeTier ranks by ts_rank at most @candidates chunks of the sources that match
-- the tsquery, and returns the best first. The query is a tsquery parameter, parsed once when
-- the statement is bound: as text cast in the statement, a prepared statement's generic plan
-- parsed it again for every candidate, in the match and in ts_rank. The sources' test is
-- wrapped in coalesce so that it is a filter, never an index scan: without statistics (right
-- after an ingestion) or when the agent's chunks are a small share of the table, the planner
-- ANDed the GIN bitmap with a scan of every chunk of the sources in their btree index (0.4 ms
-- at 10,000 chunks, more than the rest of the statement). The knowledge search statements
-- below do the same.
SELECT c.url, c.title, c.content FROM (
    SELECT k.url, k.title, k.content, k.tsv FROM knowledge_chunks k
    WHERE k.workspace_id = @workspace_id AND coalesce(k.source_id = ANY(@sources::uuid[]), false) AND k.tsv @@ @query::tsquery
    LIMIT @candidates::int) c
ORDER BY ts_rank(c.tsv, @query::tsquery) DESC
LIMIT @max::int;

-- name: SearchKnowledgeRepeated :many
-- SearchKnowledgeRepeated is the first half of the last tier (any one term, when no chunk holds
-- two of them): it ranks by ts_rank at most @candidates chunks in which one of the terms occurs
-- more than once (tsv_repeated), which rank above every chunk in which it occurs once.
SELECT c.url, c.title, c.content FROM (
    SELECT k.url, k.title, k.content, k.tsv FROM knowledge_chunks k
    WHERE k.workspace_id = @workspace_id AND coalesce(k.source_id = ANY(@sources::uuid[]), false) AND k.tsv_repeated @@ @query::tsquery
    LIMIT @candidates::int) c
ORDER BY ts_rank(c.tsv, @query::tsquery) DESC
LIMIT @max::int;

-- name: SearchKnowledgeOnce :many
-- SearchKnowledgeOnce is the second half of the last tier, sent in the same round trip as
-- the first (which finds fewer than asked nine times in ten): chunks in which one of the
-- terms occurs once, all of equal rank; the caller keeps what room the first left.
SELECT k.url, k.title, k.content FROM knowledge_chunks k
WHERE k.workspace_id = @workspace_id AND coalesce(k.source_id = ANY(@sources::uuid[]), false) AND k.tsv @@ @query::tsquery
    AND NOT k.tsv_repeated @@ @query::tsquery
LIMIT @max::int;

-- name: AgentSources :many
SELECT s.id, s.workspace_id, s.knowledge_base_id, s.type, s.url, s.depth, s.status, s.error, s.pages,
    s.path, s.upload_id, u.short_id AS upload_short_id
FROM knowledge_sources s JOIN knowledge_bases b ON b.id = s.knowledge_base_id
LEFT JOIN uploads u ON u.id = s.upload_id AND u.workspace_id = s.workspace_id
WHERE s.workspace_id = @workspace_id AND b.agent_id = @agent_id
ORDER BY s.created_at, s.id;
