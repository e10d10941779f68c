-- name: WebchatDeployment :one
-- A deployment by its id alone, for the public webchat routes, with its workspace's budget
-- state (balance, monthly cap and this month's spend) and whether the visitor of conversation
-- @visitor (a short id; '' for none) is blocked in that workspace: a message's one read
-- before its turn.
SELECT d.workspace_id, d.agent_id, d.channel_type, d.config, w.name AS workspace_name, w.status AS workspace_status,
       w.balance_nano_usd, w.monthly_cap_nano_usd, w.spend_month, w.month_spend_nano_usd,
       EXISTS (SELECT 1 FROM webchat_blocked_visitors b JOIN conversations c ON c.id = b.conversation_id
               WHERE b.workspace_id = d.workspace_id AND c.short_id = @visitor::text) AS visitor_blocked
FROM deployments d JOIN workspaces w ON w.id = d.workspace_id WHERE d.id = @id;

-- name: WebchatConversation :one
SELECT id, channel FROM conversations WHERE workspace_id = @workspace_id AND short_id = @short_id;

-- name: BlockWebchatVisitor :one
INSERT INTO webchat_blocked_visitors (workspace_id, conversation_id, reason) VALUES (@workspace_id, @conversation_id, @reason)
ON CONFLICT (workspace_id, conversation_id) DO NOTHING
RETURNING created_at;

-- name: WebchatBlockedVisitor :one
SELECT c.short_id, b.reason, b.created_at
FROM webchat_blocked_visitors b JOIN conversations c ON c.id = b.conversation_id
WHERE b.workspace_id = @workspace_id AND c.short_id = @short_id;

-- name: ListWebchatBlockedVisitors :many
SELECT c.short_id, b.reason, b.created_at
FROM webchat_blocked_visitors b JOIN conversations c ON c.id = b.conversation_id
WHERE b.workspace_id = @workspace_id
ORDER BY b.created_at DESC, c.short_id;

-- name: UnblockWebchatVisitor :one
DELETE FROM webchat_blocked_visitors b
WHERE b.workspace_id = @workspace_id
  AND b.conversation_id = (SELECT c.id FROM conversations c WHERE c.workspace_id = b.workspace_id AND c.short_id = @short_id)
RETURNING reason, created_at;
