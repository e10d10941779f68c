-- name: ConversationByShortID :one
SELECT id, short_id, channel, created_at FROM conversations
WHERE workspace_id = @workspace_id AND short_id = @short_id;

-- name: ConversationByID :one
SELECT id, short_id, channel, created_at FROM conversations
WHERE workspace_id = @workspace_id AND id = @id;

-- name: History :many
-- Notices ("Ann joined the conversation") are for the visitor, not the model.
SELECT role, content, tool_calls, tool_results FROM messages
WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id AND NOT notice
ORDER BY seq;

-- name: HistoryWindow :many
-- HistoryWindow is the newest messages of a conversation, at most @max_messages of them,
-- whose sizes (text and JSON, in bytes) add up to no more than @max_bytes counted from the
-- newest, in order. It reads the primary key backwards and stops there: a turn costs the same
-- whatever the length of the conversation.
SELECT role, content, tool_calls, tool_results FROM (
    SELECT seq, role, content, tool_calls, tool_results,
           sum(bytes) OVER (ORDER BY seq DESC) AS tail_bytes
    FROM (SELECT seq, role, content, tool_calls, tool_results, bytes FROM messages
          WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id AND NOT notice
          ORDER BY seq DESC LIMIT @max_messages::int) newest
) w
WHERE tail_bytes <= @max_bytes::bigint
ORDER BY seq;

-- name: CreateConversation :one
INSERT INTO conversations (id, workspace_id, short_id, channel) VALUES (@id, @workspace_id, @short_id, @channel)
RETURNING created_at;

-- name: SetConversationAgent :exec
UPDATE conversations SET agent_id = @agent_id, labels = @labels WHERE id = @id;

-- name: ReserveMessageSeqs :one
-- ReserveMessageSeqs locks the conversation row (concurrent turns append in turn) and
-- returns the last seq before the reserved ones.
UPDATE conversations SET message_seq = message_seq + sqlc.arg(count)::int, updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id
RETURNING (message_seq - sqlc.arg(count)::int)::int AS last_seq;

-- name: InsertMessages :copyfrom
INSERT INTO messages (workspace_id, conversation_id, seq, role, content, tool_calls, tool_results)
VALUES (@workspace_id, @conversation_id, @seq, @role, @content, @tool_calls, @tool_results);

-- name: InsertResponse :exec
INSERT INTO responses (id, workspace_id, short_id, conversation_id, status, model, background, body)
VALUES (@id, @workspace_id, @short_id, @conversation_id, @status, @model, @background, @body);

-- name: InsertResponses :exec
-- InsertResponses is InsertResponse for a batch of one workspace's responses (the group
-- commit), in one statement; a zero conversation_id stands for none.
INSERT INTO responses (id, workspace_id, short_id, conversation_id, status, model, background, body)
SELECT r.id, @workspace_id::uuid, r.short_id, NULLIF(r.conversation_id, '00000000-0000-0000-0000-000000000000'::uuid),
       r.status, r.model, r.background, r.body
FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@short_ids::text[]) AS short_id, unnest(@conversation_ids::uuid[]) AS conversation_id,
             unnest(@statuses::text[]) AS status, unnest(@models::text[]) AS model,
             unnest(@backgrounds::boolean[]) AS background, unnest(@bodies::text[]) AS body) AS r;

-- name: FinishResponse :execrows
UPDATE responses
SET status = @status, conversation_id = coalesce(sqlc.narg(conversation_id), conversation_id),
    body = @body, updated_at = now()
WHERE workspace_id = @workspace_id AND short_id = @short_id AND status IN ('queued', 'in_progress');

-- name: StartResponse :execrows
UPDATE responses
SET status = 'in_progress', body = jsonb_set(body::jsonb, '{status}', '"in_progress"')::text, updated_at = now()
WHERE workspace_id = @workspace_id AND short_id = @short_id AND status = 'queued';

-- name: FailStuckResponses :many
WITH failed AS (
    UPDATE responses SET status = 'failed', updated_at = now(),
        body = (body::jsonb || jsonb_build_object('status', 'failed', 'error', sqlc.arg(error_body)::text::jsonb))::text
    WHERE status IN ('queued', 'in_progress') AND created_at < now() - sqlc.arg(older_than)::text::interval
    RETURNING workspace_id, short_id, conversation_id)
SELECT f.workspace_id, f.short_id, c.short_id AS conversation_short_id
FROM failed f LEFT JOIN conversations c ON c.id = f.conversation_id;

-- name: ResponseByShortID :one
SELECT id, workspace_id, short_id, conversation_id, status, model, background, body
FROM responses WHERE workspace_id = @workspace_id AND short_id = @short_id;
