-- name: CreateConversations :exec
-- CreateConversations opens several conversations at once (the group commit of turns), each
-- with the seqs 1..message_seq of its first messages already reserved. The ids are chosen by
-- the caller, so the turns' messages and responses can name them in the same pipelined batch.
INSERT INTO conversations (id, workspace_id, short_id, channel, message_seq)
SELECT unnest(@ids::uuid[]), unnest(@workspace_ids::uuid[]), unnest(@short_ids::text[]), unnest(@channels::text[]), unnest(@message_seqs::int[]);

-- name: InsertMessageRows :exec
-- InsertMessageRows inserts the messages of many turns in one statement (the group commit).
-- Unlike InsertMessages (COPY, two round trips of its own) it travels in a pipelined batch
-- with the turns' other writes.
INSERT INTO messages (workspace_id, conversation_id, seq, role, content, tool_calls, tool_results)
SELECT unnest(@workspace_ids::uuid[]), unnest(@conversation_ids::uuid[]), unnest(@seqs::int[]),
       unnest(@roles::text[]), unnest(@contents::text[]), unnest(@tool_calls::jsonb[]), unnest(@tool_results::jsonb[]);

-- name: LockWorkspacesInOrder :exec
-- LockWorkspacesInOrder takes the row locks of several workspaces in id order, so that
-- batches settling several workspaces (the group commit) never wait for each other in a cycle.
-- FOR NO KEY UPDATE is the lock the UPDATE of LockWorkspaceForSettle takes: it leaves alone
-- the KEY SHARE locks of rows inserted with a foreign key to the workspace (FOR UPDATE would
-- block those inserts, and deadlock with a batch still writing its conversations).
SELECT id FROM workspaces WHERE id = ANY(@ids::uuid[]) ORDER BY id FOR NO KEY UPDATE;

-- name: ChargeWorkspaces :many
-- ChargeWorkspaces is LockWorkspaceForSettle for several workspaces at once (their rows
-- already locked by LockWorkspacesInOrder): each is charged its cost, counted in the month's
-- spend, and its balance and cursor are returned.
UPDATE workspaces w SET balance_nano_usd = w.balance_nano_usd - c.cost, updated_at = now(),
    month_spend_nano_usd = CASE WHEN w.spend_month = date_trunc('month', now() AT TIME ZONE 'UTC')::date
                                THEN w.month_spend_nano_usd + c.cost ELSE c.cost END,
    spend_month = date_trunc('month', now() AT TIME ZONE 'UTC')::date
FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@costs::bigint[]) AS cost) c
WHERE w.id = c.id
RETURNING w.id, w.balance_nano_usd, w.event_seq, w.monthly_cap_nano_usd, w.month_spend_nano_usd;

-- name: AppendMessageRows :exec
-- AppendMessageRows appends messages to a conversation in one statement (the group commit):
-- the UPDATE locks its row and reserves their seqs, as ReserveMessageSeqs does, and the INSERT
-- numbers them from it, so no result has to come back before the messages are written and
-- the statement travels in a pipelined batch. A conversation that is not the workspace's gets
-- nothing: the caller reads the count of rows.
WITH reserved AS (
    UPDATE conversations SET message_seq = message_seq + cardinality(@roles::text[]), updated_at = now()
    WHERE workspace_id = @workspace_id::uuid AND id = @id::uuid
    RETURNING message_seq - cardinality(@roles::text[]) AS last_seq
)
INSERT INTO messages (workspace_id, conversation_id, seq, role, content, tool_calls, tool_results)
SELECT @workspace_id::uuid, @id::uuid, reserved.last_seq + generate_subscripts(@roles::text[], 1),
       unnest(@roles::text[]), unnest(@contents::text[]), unnest(@tool_calls::jsonb[]), unnest(@tool_results::jsonb[])
FROM reserved;
