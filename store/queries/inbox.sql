-- name: InboxConversations :many
-- InboxConversations lists a workspace's agent conversations by newest activity, with
-- optional filters (an empty filter matches all) and a keyset cursor (updated_at, id).
-- assignee_mode: empty for any, 'none' unassigned, 'user' held by @assignee.
SELECT c.id, c.short_id, c.channel, c.status, c.labels, c.created_at, c.updated_at, c.agent_id,
       coalesce(a.name, '') AS agent_name, c.assignee_user_id, c.assigned_at, c.escalated_at,
       c.escalation_trigger, c.contact_id, k.name AS contact_name, k.email AS contact_email, k.phone AS contact_phone,
       u.email AS assignee_email, u.display_name AS assignee_display_name,
       coalesce((SELECT m.content FROM messages m
                 WHERE m.workspace_id = c.workspace_id AND m.conversation_id = c.id AND m.role <> 'tool' AND m.content <> ''
                 ORDER BY m.seq DESC LIMIT 1), '')::text AS last_message
FROM conversations c
LEFT JOIN agents a ON a.id = c.agent_id
LEFT JOIN contacts k ON k.id = c.contact_id AND k.workspace_id = c.workspace_id
LEFT JOIN users u ON u.id = c.assignee_user_id
WHERE c.workspace_id = @workspace_id
  -- Agents' conversations and those a channel carries; not the /v1 API's own.
  AND (c.agent_id IS NOT NULL OR c.channel <> 'api')
  AND (@status::text = '' OR c.status = @status::text)
  AND (@assignee_mode::text = ''
       OR (@assignee_mode::text = 'none' AND c.assignee_user_id IS NULL)
       OR (@assignee_mode::text = 'user' AND c.assignee_user_id = sqlc.narg('assignee')::uuid))
  AND (@channel::text = '' OR c.channel = @channel::text)
  AND (sqlc.narg('agent_id')::uuid IS NULL OR c.agent_id = sqlc.narg('agent_id')::uuid)
  AND (sqlc.narg('after_at')::timestamptz IS NULL
       OR (c.updated_at, c.id) < (sqlc.narg('after_at')::timestamptz, sqlc.narg('after_id')::uuid))
ORDER BY c.updated_at DESC, c.id DESC
LIMIT @max_rows;

-- name: InboxConversation :one
SELECT c.id, c.short_id, c.channel, c.status, c.labels, c.created_at, c.updated_at, c.agent_id,
       coalesce(a.name, '') AS agent_name, c.assignee_user_id, c.assigned_at, c.escalated_at,
       c.escalation_trigger, c.escalation_action, c.escalation_summary, c.pickup_timed_out_at,
       c.contact_id, k.name AS contact_name, k.email AS contact_email, k.phone AS contact_phone,
       u.email AS assignee_email, u.display_name AS assignee_display_name
FROM conversations c
LEFT JOIN agents a ON a.id = c.agent_id
LEFT JOIN contacts k ON k.id = c.contact_id AND k.workspace_id = c.workspace_id
LEFT JOIN users u ON u.id = c.assignee_user_id
WHERE c.workspace_id = @workspace_id AND c.id = @id AND (c.agent_id IS NOT NULL OR c.channel <> 'api');

-- name: LockConversationHold :one
-- LockConversationHold reads who holds a conversation, locking its row for the change.
SELECT status, assignee_user_id, channel, short_id, agent_id FROM conversations
WHERE workspace_id = @workspace_id AND id = @id AND (agent_id IS NOT NULL OR channel <> 'api')
FOR UPDATE;

-- name: AssignConversation :exec
-- AssignConversation hands a conversation to a person (or back to the queue with NULL). A
-- person taking over an open conversation escalates it.
UPDATE conversations SET assignee_user_id = sqlc.narg(assignee)::uuid,
    assigned_at = CASE WHEN sqlc.narg(assignee)::uuid IS NULL THEN NULL ELSE now() END,
    status = CASE WHEN sqlc.narg(assignee)::uuid IS NOT NULL AND status = 'open' THEN 'escalated' ELSE status END,
    escalated_at = CASE WHEN sqlc.narg(assignee)::uuid IS NOT NULL THEN coalesce(escalated_at, now()) ELSE escalated_at END,
    updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: ReleaseConversation :exec
-- ReleaseConversation hands a conversation back to its agent: open, nobody holding it, and
-- free to escalate again.
UPDATE conversations SET status = 'open', assignee_user_id = NULL, assigned_at = NULL, escalated_at = NULL,
    pickup_timed_out_at = NULL, awaiting_contact = false, failed_attempts = 0, unclaimed_notified_at = NULL,
    updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: CloseConversation :exec
UPDATE conversations SET status = 'closed', updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: SetEscalationSummary :exec
UPDATE conversations SET escalation_summary = @summary WHERE workspace_id = @workspace_id AND id = @id;

-- name: InsertAuthoredMessage :one
-- InsertAuthoredMessage appends a person's reply or a notice at the end of a conversation
-- (its row is locked by reserving the seq).
WITH seq AS (
    UPDATE conversations SET message_seq = message_seq + 1, updated_at = now()
    WHERE conversations.workspace_id = @workspace_id AND conversations.id = @conversation_id
    RETURNING message_seq
)
INSERT INTO messages (workspace_id, conversation_id, seq, role, content, author_user_id, author_name, notice)
SELECT @workspace_id, @conversation_id, seq.message_seq, 'assistant', @content, sqlc.narg(author_user_id), @author_name, @notice
FROM seq
RETURNING seq, created_at;

-- name: ConversationTranscript :many
-- ConversationTranscript is what a person reads of a conversation: text messages with their
-- authors and notices, without tool traffic.
SELECT seq, role, content, author_user_id, author_name, notice, created_at FROM messages
WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id AND role <> 'tool' AND content <> ''
ORDER BY seq;

-- name: AuthoredMessagesAfter :many
-- AuthoredMessagesAfter is what a visitor's stream sends: people's replies and notices after
-- a seq.
SELECT seq, content, author_name, notice, created_at FROM messages
WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id AND seq > @after
  AND author_name IS NOT NULL
ORDER BY seq LIMIT 100;

-- name: LastMessageSeq :one
SELECT message_seq FROM conversations WHERE workspace_id = @workspace_id AND id = @id;

-- name: InsertNote :one
INSERT INTO conversation_notes (workspace_id, conversation_id, author_user_id, author_name, body)
VALUES (@workspace_id, @conversation_id, sqlc.narg(author_user_id), @author_name, @body)
RETURNING id, created_at;

-- name: ConversationNotes :many
SELECT id, author_user_id, author_name, body, created_at FROM conversation_notes
WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id
ORDER BY created_at, id;

-- name: WaitingConversations :one
-- WaitingConversations counts the escalated conversations nobody holds.
SELECT count(*) FROM conversations
WHERE workspace_id = @workspace_id AND status = 'escalated' AND assignee_user_id IS NULL;

-- name: ClaimUnclaimedNotices :many
-- ClaimUnclaimedNotices marks the escalated conversations that waited unclaimed longer than
-- their workspace's setting as notified (once each) and returns them. They are locked in id
-- order, as every writer of several conversations locks them, and one a transaction holds (a
-- turn, a person taking it over, an erasure) is skipped, not waited for: the next sweep
-- finds it if it still waits. (The UPDATE alone locked them in its scan's order, and waited.)
WITH due AS (
    SELECT c.id FROM conversations c JOIN workspaces w ON w.id = c.workspace_id
    WHERE c.status = 'escalated' AND c.assignee_user_id IS NULL AND c.unclaimed_notified_at IS NULL
      AND c.escalated_at + w.inbox_notify_after_seconds * interval '1 second' <= sqlc.arg(now)::timestamptz
    ORDER BY c.id
    FOR NO KEY UPDATE OF c SKIP LOCKED
)
UPDATE conversations c SET unclaimed_notified_at = sqlc.arg(now)::timestamptz
FROM due, workspaces w
WHERE c.id = due.id AND w.id = c.workspace_id
RETURNING c.id, c.workspace_id, c.short_id, c.escalated_at, c.escalation_trigger, c.escalation_summary, w.name AS workspace_name;

-- name: UnclaimedSubscribers :many
-- UnclaimedSubscribers are the people of a workspace who opted in to the unclaimed emails and
-- may take a conversation over (members and above).
SELECT email FROM users
WHERE workspace_id = @workspace_id AND notify_unclaimed AND role IN ('owner', 'admin', 'member')
ORDER BY email;

-- name: InboxSettings :one
SELECT inbox_notify_after_seconds FROM workspaces WHERE id = @workspace_id;

-- name: SetInboxNotifyAfter :exec
UPDATE workspaces SET inbox_notify_after_seconds = @seconds WHERE id = @workspace_id;

-- name: SetUserInboxPrefs :one
UPDATE users SET display_name = coalesce(sqlc.narg(display_name), display_name),
    notify_unclaimed = coalesce(sqlc.narg(notify_unclaimed), notify_unclaimed), updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id
RETURNING id, email, role, display_name, notify_unclaimed;

-- name: InboxUser :one
SELECT id, email, role, display_name, notify_unclaimed FROM users
WHERE workspace_id = @workspace_id AND id = @id;
