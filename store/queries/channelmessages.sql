-- name: InsertInboundMessage :one
-- InsertInboundMessage records an inbound message once: a retried webhook (same carrier id)
-- returns no row.
INSERT INTO channel_messages (workspace_id, channel_id, direction, provider_message_id, remote, local, body, segments, status)
VALUES (@workspace_id, @channel_id, 'inbound', @provider_message_id, @remote, @local, @body, @segments, 'received')
ON CONFLICT (channel_id, direction, provider_message_id) WHERE provider_message_id IS NOT NULL DO NOTHING
RETURNING id;

-- name: ChannelMessageByID :one
SELECT * FROM channel_messages WHERE workspace_id = @workspace_id AND id = @id;

-- name: SetChannelMessageState :exec
UPDATE channel_messages SET status = @status, reason = sqlc.narg(reason), conversation_id = sqlc.narg(conversation_id), updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: InsertOutboundMessage :one
-- InsertOutboundMessage records the reply to an inbound message as pending (at most one:
-- reply_to is unique) or another outbound message; no row comes back when the reply exists.
-- A reply handed to the carrier right after its transaction commits is recorded `sending`
-- (claimed) at once.
INSERT INTO channel_messages (workspace_id, channel_id, direction, remote, local, body, segments, status, conversation_id, reply_to)
VALUES (@workspace_id, @channel_id, 'outbound', @remote, @local, @body, @segments, CASE WHEN @claimed::bool THEN 'sending' ELSE 'pending' END,
    sqlc.narg(conversation_id), sqlc.narg(reply_to))
ON CONFLICT (reply_to) WHERE reply_to IS NOT NULL DO NOTHING
RETURNING id;

-- name: ReplyOf :one
SELECT * FROM channel_messages WHERE workspace_id = @workspace_id AND reply_to = @reply_to;

-- name: FinishOutboundMessage :one
-- FinishOutboundMessage records the carrier's answer to a send, only while the message is in
-- the state the sender left it in (from): a late finish never overwrites a newer state (the
-- answer recorded by a rerun that resolved the send, a delivery report applied since). It
-- returns the short id of the message's conversation, which its charge's event names.
UPDATE channel_messages m SET status = @status, reason = sqlc.narg(reason), provider_message_id = sqlc.narg(provider_message_id), updated_at = now()
WHERE m.workspace_id = @workspace_id AND m.id = @id AND m.status = @from_status
RETURNING m.id, coalesce((SELECT c.short_id FROM conversations c WHERE c.id = m.conversation_id), '')::text AS conversation_short_id;

-- name: KeyShareConversations :exec
-- KeyShareConversations takes the KEY SHARE lock of these conversations (each of the workspace
-- at the same place of @workspace_ids), in id order, until the transaction ends: the lock a
-- row naming one takes (a ledger row, a message), so that a transaction that will write such
-- rows after others (the sends' finish: the messages' rows, then the workspaces', then the
-- charges) can take it first, as erasures and deletes take the conversations first, and
-- neither waits for the other in a cycle. A conversation that is gone is left out.
SELECT c.id FROM conversations c
JOIN (SELECT unnest(@workspace_ids::uuid[]) AS workspace_id, unnest(@ids::uuid[]) AS id) AS i
  ON c.workspace_id = i.workspace_id AND c.id = i.id
ORDER BY c.id
FOR KEY SHARE OF c;

-- name: ClaimReplySend :one
-- ClaimReplySend hands the pending reply to an inbound message to the carrier, once (as
-- ClaimSend, found by the message it answers): no row when there is none pending.
UPDATE channel_messages SET status = 'sending', updated_at = now()
WHERE workspace_id = @workspace_id AND reply_to = @reply_to AND status = 'pending'
RETURNING *;

-- name: ThreadConversation :one
-- ThreadConversation is the newest conversation of the remote party on the channel, with its
-- agent and status.
SELECT c.id, c.short_id, c.status, c.agent_id, c.contact_id FROM conversation_threads t JOIN conversations c ON c.id = t.conversation_id
WHERE t.channel_id = @channel_id AND t.remote = @remote
ORDER BY t.created_at DESC LIMIT 1;

-- name: InsertThread :exec
INSERT INTO conversation_threads (conversation_id, workspace_id, channel_id, remote) VALUES (@conversation_id, @workspace_id, @channel_id, @remote)
ON CONFLICT (conversation_id) DO NOTHING;

-- name: OptOut :exec
INSERT INTO sms_opt_outs (workspace_id, sender, remote) VALUES (@workspace_id, @sender, @remote)
ON CONFLICT (workspace_id, sender, remote) DO NOTHING;

-- name: OptIn :exec
DELETE FROM sms_opt_outs WHERE workspace_id = @workspace_id AND sender = @sender AND remote = @remote;

-- name: OptedOut :one
SELECT EXISTS (SELECT 1 FROM sms_opt_outs WHERE workspace_id = @workspace_id AND sender = @sender AND remote = @remote);

-- name: ContactByPhone :one
-- ContactByPhone is the oldest live contact of the workspace with this phone number.
SELECT id, name FROM contacts WHERE workspace_id = @workspace_id AND phone = @phone AND deleted_at IS NULL
ORDER BY created_at, id LIMIT 1;

-- name: CreatePhoneContact :one
INSERT INTO contacts (workspace_id, phone, source) VALUES (@workspace_id, @phone, 'conversation') RETURNING id;

-- name: AssignConversationAgent :exec
-- AssignConversationAgent gives a conversation kept with no agent (nobody held the seat, or
-- the workspace could not pay) to the agent that answers its next message.
UPDATE conversations SET agent_id = @agent_id, updated_at = now() WHERE workspace_id = @workspace_id AND id = @id AND agent_id IS NULL;

-- name: InsertEarlyReport :exec
INSERT INTO early_delivery_reports (channel_id, provider_message_id, status, reason) VALUES (@channel_id, @provider_message_id, @status, sqlc.narg(reason));

-- name: LockDeliveryReports :exec
-- LockDeliveryReports serializes, until the transaction ends, the recording of a carrier id
-- by its send and the keeping of an early report for that id, so that one of the two always
-- sees the other committed (ApplyEarlyReports, ReportDelivery). The first key is the class of
-- these locks (the replica locks use another); an unrelated id of equal hash only waits.
SELECT pg_advisory_xact_lock(584120407, hashtext(@provider_message_id::text));

-- name: TakeEarlyReports :many
DELETE FROM early_delivery_reports WHERE channel_id = @channel_id AND provider_message_id = @provider_message_id
RETURNING status, reason, received_at;

-- name: ClaimSend :one
-- ClaimSend hands a pending outbound message to the carrier, once: a rerun finds it sending.
UPDATE channel_messages SET status = 'sending', updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id AND status = 'pending'
RETURNING id;

-- name: ThreadOf :one
-- ThreadOf is the channel and remote party carrying a conversation.
SELECT channel_id, remote FROM conversation_threads WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id;

-- name: LockReportedCampaigns :exec
-- LockReportedCampaigns locks, in id order, the campaigns whose sends a batch of final delivery
-- reports names (each carrier id of the workspace at the same place of @workspace_ids), before
-- the batch applies them (ApplyDeliveryReport locks a send's row, then its campaign's): two
-- batches naming sends of the same two campaigns in crossing orders (reports of two
-- campaigns' messages reaching two replicas) would otherwise each hold the campaign the other
-- waits for. Taking them first is also the order a send's record keeps (campaign, then send).
SELECT c.id FROM campaigns c
WHERE c.id IN (
    SELECT s.campaign_id FROM campaign_sends s
    JOIN (SELECT unnest(@workspace_ids::uuid[]) AS workspace_id, unnest(@provider_ids::text[]) AS provider_id) AS r
      ON s.workspace_id = r.workspace_id AND s.provider_message_id = r.provider_id
    WHERE s.provider_message_id IS NOT NULL AND s.delivery IS NULL AND s.status = 'sent')
ORDER BY c.id
FOR NO KEY UPDATE OF c;

-- name: ApplyDeliveryReport :one
-- ApplyDeliveryReport applies a carrier's status callback in one statement: to the channel's
-- outbound message of that carrier id (a final status is never replaced by an earlier one
-- arriving late, nor `sent` by `queued`) and, for a final word (delivery: delivered or undelivered), to the campaign
-- message of that id and its campaign's counters, once. known says whether the id names a
-- message of the channel or a campaign message of the workspace: if not, the report came
-- before the send recorded the id, and the caller keeps it (InsertEarlyReport). The campaign's
-- row is locked before the send's (the locking CTE is read by the send's UPDATE before it
-- updates), the order a send's record and LockReportedCampaigns keep.
WITH campaign AS (
    SELECT c.id FROM campaigns c JOIN campaign_sends s ON s.campaign_id = c.id
    WHERE s.workspace_id = @workspace_id::uuid AND s.provider_message_id = @provider_message_id::text
      AND sqlc.narg(delivery)::text IS NOT NULL
    FOR NO KEY UPDATE OF c
), message AS (
    UPDATE channel_messages SET status = @status, reason = coalesce(sqlc.narg(reason), reason), updated_at = now()
    WHERE channel_id = @channel_id::uuid AND direction = 'outbound' AND provider_message_id = @provider_message_id::text
      AND status NOT IN ('delivered', 'undelivered', 'failed') AND NOT (status = 'sent' AND @status::text = 'queued')
    RETURNING id
), sent AS (
    UPDATE campaign_sends cs SET delivery = sqlc.narg(delivery)::text, updated_at = now()
    FROM campaign
    WHERE cs.provider_message_id = @provider_message_id::text AND cs.workspace_id = @workspace_id::uuid AND cs.campaign_id = campaign.id
      AND cs.delivery IS NULL AND cs.status = 'sent' AND sqlc.narg(delivery)::text IS NOT NULL
    RETURNING cs.campaign_id
), counted AS (
    UPDATE campaigns c SET delivered_count = c.delivered_count + (sqlc.narg(delivery)::text = 'delivered')::int,
        undelivered_count = c.undelivered_count + (sqlc.narg(delivery)::text = 'undelivered')::int, updated_at = now()
    FROM sent WHERE c.workspace_id = @workspace_id::uuid AND c.id = sent.campaign_id
    RETURNING c.id
)
SELECT (EXISTS (SELECT 1 FROM message) OR EXISTS (SELECT 1 FROM counted)
    OR EXISTS (SELECT 1 FROM channel_messages m WHERE m.channel_id = @channel_id::uuid AND m.direction = 'outbound' AND m.provider_message_id = @provider_message_id::text)
    OR EXISTS (SELECT 1 FROM campaign_sends s WHERE s.workspace_id = @workspace_id::uuid AND s.provider_message_id = @provider_message_id::text))::bool AS known;

-- name: RecordInboundQueued :one
-- RecordInboundQueued records an inbound message once, with its row in the inbox (its reply
-- job is inserted from there, TakeInbox), in one statement: a retried webhook (same carrier
-- id) returns no row and writes nothing.
WITH m AS (
    INSERT INTO channel_messages (workspace_id, channel_id, direction, provider_message_id, remote, local, body, segments, status)
    VALUES (@workspace_id, @channel_id, 'inbound', @provider_message_id, @remote, @local, @body, @segments, 'received')
    ON CONFLICT (channel_id, direction, provider_message_id) WHERE provider_message_id IS NOT NULL DO NOTHING
    RETURNING id
), queued AS (
    INSERT INTO channel_inbox (message_id) SELECT id FROM m
)
SELECT id FROM m;

-- name: TakeInbox :many
-- TakeInbox deletes these messages' inbox rows, in the transaction that inserts their reply
-- jobs, and returns those it found (another replica's sweep may have taken some).
WITH taken AS (
    DELETE FROM channel_inbox WHERE message_id = ANY(@ids::uuid[]) RETURNING message_id
)
SELECT m.id, m.workspace_id FROM taken t JOIN channel_messages m ON m.id = t.message_id;

-- name: TakeStaleInbox :many
-- TakeStaleInbox takes up to lim inbox rows queued before before, oldest first: messages whose
-- replica died before it inserted their jobs. Rows another transaction holds are skipped.
WITH stale AS (
    SELECT message_id FROM channel_inbox
    WHERE queued_at < @before::timestamptz
    ORDER BY queued_at LIMIT @lim::int FOR UPDATE SKIP LOCKED
), taken AS (
    DELETE FROM channel_inbox i USING stale WHERE i.message_id = stale.message_id RETURNING i.message_id
)
SELECT m.id, m.workspace_id FROM taken t JOIN channel_messages m ON m.id = t.message_id;
