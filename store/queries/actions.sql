-- name: ParkAction :exec
INSERT INTO pending_actions (id, workspace_id, short_id, conversation_id, code, tool, arguments, summary, key_id, role, expires_at)
VALUES (@id, @workspace_id, @short_id, @conversation_id, @code, @tool, @arguments, @summary, @key_id, @role, @expires_at);

-- name: PendingActionsForUpdate :many
-- The pending actions of a conversation, locked: the turn that resolves them holds them
-- until it commits, so a second `YES` waits and then finds the action resolved.
SELECT * FROM pending_actions
WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id AND status = 'pending'
ORDER BY created_at, id
FOR UPDATE;

-- name: ResolveAction :exec
UPDATE pending_actions SET status = @status, resolved_at = now()
WHERE workspace_id = @workspace_id AND id = @id AND status = 'pending';

-- name: SetActionResult :exec
UPDATE pending_actions SET result = @result WHERE workspace_id = @workspace_id AND id = @id;

-- name: LatestActionWithCode :one
SELECT * FROM pending_actions
WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id AND code = @code
ORDER BY created_at DESC, id DESC
LIMIT 1;

-- name: ExpireActions :many
-- Expires what is past its time, a bounded batch at a time; SKIP LOCKED leaves alone the
-- actions a turn is resolving right now.
UPDATE pending_actions SET status = 'expired', resolved_at = now()
WHERE id IN (
    SELECT id FROM pending_actions
    WHERE status = 'pending' AND expires_at <= now()
    ORDER BY expires_at
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED)
RETURNING *;

-- name: ActionByShortID :one
SELECT * FROM pending_actions WHERE workspace_id = @workspace_id AND short_id = @short_id;

-- name: PendingActionsOfWorkspace :many
-- The workspace's actions still waiting for confirmation (GET /api/confirmations), oldest
-- first; those past their expiry are left to the sweep.
SELECT * FROM pending_actions
WHERE workspace_id = @workspace_id AND status = 'pending' AND expires_at > now()
ORDER BY created_at, id
LIMIT 100;
