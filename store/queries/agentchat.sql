-- name: AgentConversationState :one
SELECT c.id, c.short_id, c.channel, c.created_at, c.agent_id, c.status, c.labels, c.contact_id,
       c.disclosed_at, c.escalation_trigger, c.escalation_action, c.escalated_at, c.failed_attempts,
       c.awaiting_contact, c.pickup_timed_out_at, c.assignee_user_id,
       k.name AS contact_name, k.email AS contact_email, k.phone AS contact_phone
FROM conversations c LEFT JOIN contacts k ON k.id = c.contact_id AND k.workspace_id = c.workspace_id
WHERE c.workspace_id = @workspace_id AND c.id = @id;

-- name: CreateContact :one
INSERT INTO contacts (workspace_id, name, email, phone)
VALUES (@workspace_id, sqlc.narg(name), sqlc.narg(email), sqlc.narg(phone))
RETURNING id;

-- name: MergeContact :exec
-- MergeContact fills in what is given and keeps what is not.
UPDATE contacts SET name = coalesce(sqlc.narg(name), name), email = coalesce(sqlc.narg(email), email),
    phone = coalesce(sqlc.narg(phone), phone), updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: OpenAgentConversation :exec
UPDATE conversations SET agent_id = @agent_id, contact_id = sqlc.narg(contact_id), disclosed_at = sqlc.narg(disclosed_at)
WHERE workspace_id = @workspace_id AND id = @id;

-- name: SetConversationContact :exec
UPDATE conversations SET contact_id = @contact_id, updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: AddConversationLabel :one
UPDATE conversations SET labels = CASE WHEN @label::text = ANY (labels) THEN labels ELSE array_append(labels, @label::text) END,
    updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id
RETURNING labels;

-- name: SetConversationFlow :exec
-- SetConversationFlow writes the runtime's state of a conversation after a turn.
UPDATE conversations SET status = @status, escalation_trigger = sqlc.narg(escalation_trigger),
    escalation_action = sqlc.narg(escalation_action), escalated_at = sqlc.narg(escalated_at),
    failed_attempts = @failed_attempts, awaiting_contact = @awaiting_contact,
    pickup_timed_out_at = sqlc.narg(pickup_timed_out_at), updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: ConversationMessages :many
SELECT seq, role, content, created_at FROM messages
WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id AND role <> 'tool' AND content <> ''
ORDER BY seq;
