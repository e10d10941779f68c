-- name: LockWorkspaceForSettle :one
-- LockWorkspaceForSettle charges the workspace and takes its row lock until commit: the lock
-- makes one workspace's event cursors become visible in the order they were assigned.
-- It also counts the charge in the month's spend (UTC), starting the counter again in a new month.
UPDATE workspaces SET balance_nano_usd = balance_nano_usd - @cost, updated_at = now(),
    month_spend_nano_usd = CASE WHEN spend_month = date_trunc('month', now() AT TIME ZONE 'UTC')::date
                                THEN month_spend_nano_usd + @cost ELSE @cost END,
    spend_month = date_trunc('month', now() AT TIME ZONE 'UTC')::date
WHERE id = @id
RETURNING balance_nano_usd, event_seq, monthly_cap_nano_usd, month_spend_nano_usd;

-- name: InsertLedger :exec
INSERT INTO ledger (id, workspace_id, amount_nano_usd, balance_after, category, model, input_tokens, output_tokens, conversation_id)
VALUES (@id, @workspace_id, @amount_nano_usd, @balance_after, @category, @model, @input_tokens, @output_tokens, @conversation_id);

-- name: SetEventSeq :exec
UPDATE workspaces SET event_seq = @event_seq WHERE id = @id;

-- name: InsertEvents :exec
-- InsertEvents stores a run of events in one statement; set-returning functions in a select
-- list advance in step, so the arrays zip like a multi-argument unnest.
INSERT INTO events (workspace_id, seq, short_id, type, envelope, created_at)
SELECT @workspace_id::uuid, unnest(@seqs::bigint[]), unnest(@short_ids::text[]), unnest(@types::text[]),
       unnest(@envelopes::text[]), @created_at::timestamptz;

-- name: InsertEventDispatch :exec
-- InsertEventDispatch queues for the relay only the events some enabled endpoint of the
-- workspace subscribes to when they commit: a workspace without webhooks pays nothing for the
-- outbox (the queue's inserts, the relay's claims and deletes, their vacuum were two thirds of
-- PostgreSQL's time under ephemeral load). An endpoint created, enabled or subscribed later
-- receives the events committed after it, as the relay's claim (which checks the endpoints
-- again) would decide anyway for an event it reached after the change.
INSERT INTO event_dispatch (workspace_id, seq, type)
SELECT @workspace_id::uuid, e.seq, e.type
FROM (SELECT unnest(@seqs::bigint[]) AS seq, unnest(@types::text[]) AS type) AS e
WHERE EXISTS (
    SELECT 1 FROM webhook_endpoints w
    WHERE w.workspace_id = @workspace_id::uuid AND w.enabled
      AND (e.type = ANY (w.event_types) OR '*' = ANY (w.event_types)));

-- name: EventCursors :many
SELECT id, event_seq FROM workspaces WHERE id = ANY(@ids::uuid[]);

-- name: EventsAfter :many
SELECT * FROM events
WHERE workspace_id = @workspace_id AND seq > @after
ORDER BY seq LIMIT @max::int;

-- name: EventByShortID :one
SELECT * FROM events WHERE workspace_id = @workspace_id AND short_id = @short_id;

-- name: ClaimUndispatched :many
-- ClaimUndispatched takes events off the dispatch queue, skipping those another replica
-- holds, with the enabled endpoints subscribed to each (`*` subscribes to everything).
WITH claimed AS (
    DELETE FROM event_dispatch WHERE (event_dispatch.workspace_id, event_dispatch.seq) IN (
        SELECT d.workspace_id, d.seq FROM event_dispatch d ORDER BY d.created_at LIMIT @max::int FOR UPDATE SKIP LOCKED)
    RETURNING event_dispatch.workspace_id, event_dispatch.seq, event_dispatch.type
)
SELECT c.workspace_id, c.seq,
       coalesce(array_agg(w.id) FILTER (WHERE w.id IS NOT NULL), '{}')::uuid[] AS endpoint_ids
FROM claimed c
LEFT JOIN webhook_endpoints w ON w.workspace_id = c.workspace_id AND w.enabled
    AND (c.type = ANY (w.event_types) OR '*' = ANY (w.event_types))
GROUP BY c.workspace_id, c.seq
ORDER BY c.workspace_id, c.seq;

-- name: Announce :exec
-- Announce sends one NOTIFY per payload on channel.
SELECT pg_notify(@channel::text, p) FROM unnest(@payloads::text[]) AS p;
