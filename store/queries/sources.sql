-- name: AddSource :one
-- AddSource stamps created_at with the clock, not the transaction's start, so the sources
-- of one blueprint list in their order (AgentSources sorts by it).
INSERT INTO knowledge_sources (workspace_id, knowledge_base_id, type, url, depth, path, status, error, upload_id, text, created_at)
VALUES (@workspace_id, @knowledge_base_id, @type, sqlc.narg(url), sqlc.narg(depth), nullif(@path::text, ''), @status,
    sqlc.narg(error), sqlc.narg(upload_id), sqlc.narg(text), clock_timestamp())
RETURNING id;

-- name: SourceText :one
-- SourceText is the text of a manual_text source.
SELECT coalesce(text, '')::text FROM knowledge_sources WHERE workspace_id = @workspace_id AND id = @id;

-- name: ClaimWaitingSources :many
-- ClaimWaitingSources attaches an upload to the workspace's pending file sources that name
-- its filename and have no upload yet, and returns them, so their ingestion can be queued.
UPDATE knowledge_sources SET upload_id = @upload_id, updated_at = now()
WHERE workspace_id = @workspace_id AND status = 'pending' AND upload_id IS NULL
  AND type IN ('file_upload', 'markdown_file') AND path = @path::text
RETURNING id;
