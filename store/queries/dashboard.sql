-- name: DailyUsage :many
-- DailyUsage is the workspace's spend (positive nano-USD) and charged turns per UTC day since
-- @since; days without any are absent.
SELECT date_trunc('day', created_at, 'UTC')::timestamptz AS day,
       coalesce(sum(-amount_nano_usd), 0)::bigint AS spend_nano_usd,
       count(*)::bigint AS turns
FROM ledger
WHERE workspace_id = @workspace_id AND amount_nano_usd < 0 AND created_at >= @since
GROUP BY 1 ORDER BY 1;

-- name: TopAgents :many
-- TopAgents ranks the workspace's agents by spend since @since.
SELECT a.id, a.name, coalesce(sum(-l.amount_nano_usd), 0)::bigint AS spend_nano_usd, count(*)::bigint AS turns
FROM ledger l
JOIN conversations c ON c.id = l.conversation_id AND c.workspace_id = l.workspace_id
JOIN agents a ON a.id = c.agent_id AND a.workspace_id = l.workspace_id
WHERE l.workspace_id = @workspace_id AND l.amount_nano_usd < 0 AND l.created_at >= @since
GROUP BY a.id, a.name ORDER BY 3 DESC, a.name LIMIT @max_rows;

-- name: ListConversations :many
-- ListConversations lists the workspace's conversations, newest first, with optional filters
-- (an empty filter matches all).
SELECT c.id, c.short_id, c.channel, c.status, c.labels, c.created_at, c.updated_at, c.message_seq,
       a.id AS agent_id, coalesce(a.name, '') AS agent_name
FROM conversations c LEFT JOIN agents a ON a.id = c.agent_id
WHERE c.workspace_id = @workspace_id
  AND (sqlc.narg('agent_id')::uuid IS NULL OR c.agent_id = sqlc.narg('agent_id')::uuid)
  AND (@channel::text = '' OR c.channel = @channel::text)
  AND (@status::text = '' OR c.status = @status::text)
  AND (@label::text = '' OR @label::text = ANY(c.labels))
ORDER BY c.created_at DESC, c.id LIMIT @max_rows;
