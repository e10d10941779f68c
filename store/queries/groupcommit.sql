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
       unnest(@roles::text[]), unnest(@contents::text[]), unnest(@tool_calls::json[]), unnest(@tool_results::json[]);

-- name: LockWorkspacesInOrder :exec
-- LockWorkspacesInOrder takes the row locks of several workspaces in id order, so that
-- batches settling several workspaces (the group commit) never wait for each other in a cycle.
-- FOR NO KEY UPDATE is the lock the UPDATE of LockWorkspaceForSettle takes: it leaves alone
-- the KEY SHARE locks of rows inserted with a foreign key to the workspace (FOR UPDATE would
-- block those inserts, and deadlock with a batch still writing its conversations).
SELECT id FROM workspaces WHERE id = ANY(@ids::uuid[]) ORDER BY id FOR NO KEY UPDATE;

-- name: SettleWorkspace :one
-- SettleWorkspace settles a batch of one workspace (the group commit, the write-behind flush)
-- in one statement, so that it can travel with COMMIT and nothing waits on this process while
-- the workspace's row is locked: from the UPDATE that takes the lock to COMMIT, every other
-- batch of the workspace waits. It charges the workspace the batch's cost (counted in the
-- month's spend, UTC), moves its event cursor past the batch's events, and writes:
--   - the ledger rows, each with the balance after its own charge: the balance after the
--     whole batch plus its balance_offset (the charges after it);
--   - the events, the cursor plus their event_numbers (1, 2, ...) their seqs; the envelope of an event with
--     has_balance is its head, the balance after its charge (format_usd), then its tail;
--   - their dispatch rows, for the events an enabled endpoint of the workspace subscribes to
--     (as InsertEventDispatch).
-- It returns the workspace's balance and month's spend after the batch, the cursor before it
-- and how many dispatch rows it wrote. A workspace that is gone fails it as not found
-- (raise_not_found): it travels with COMMIT.
WITH w AS (
    UPDATE workspaces ws SET balance_nano_usd = ws.balance_nano_usd - @cost::bigint, event_seq = ws.event_seq + @event_count::bigint,
        updated_at = now(),
        month_spend_nano_usd = CASE WHEN ws.spend_month = date_trunc('month', now() AT TIME ZONE 'UTC')::date
                                    THEN ws.month_spend_nano_usd + @cost::bigint ELSE @cost::bigint END,
        spend_month = date_trunc('month', now() AT TIME ZONE 'UTC')::date
    WHERE ws.id = @id::uuid
    RETURNING ws.id AS workspace_id, ws.balance_nano_usd, (ws.event_seq - @event_count::bigint)::bigint AS first_seq,
              ws.monthly_cap_nano_usd, ws.month_spend_nano_usd
), ledger_rows AS (
    INSERT INTO ledger (id, workspace_id, amount_nano_usd, balance_after, category, model, input_tokens, output_tokens, conversation_id)
    SELECT l.id, w.workspace_id, l.amount, w.balance_nano_usd + l.balance_offset, l.category, l.model, l.input_tokens, l.output_tokens,
           NULLIF(l.conversation_id, '00000000-0000-0000-0000-000000000000'::uuid)
    FROM w, (SELECT unnest(@ledger_ids::uuid[]) AS id, unnest(@amounts::bigint[]) AS amount,
                    unnest(@balance_offsets::bigint[]) AS balance_offset, unnest(@categories::text[]) AS category,
                    unnest(@models::text[]) AS model, unnest(@input_tokens::bigint[]) AS input_tokens,
                    unnest(@output_tokens::bigint[]) AS output_tokens, unnest(@conversation_ids::uuid[]) AS conversation_id) AS l
), inserted AS (
    INSERT INTO events (workspace_id, seq, short_id, type, envelope, created_at)
    SELECT w.workspace_id, w.first_seq + e.n, e.short_id, e.type,
           CASE WHEN e.has_balance THEN e.head || format_usd(w.balance_nano_usd + e.balance_offset) || e.tail ELSE e.head END,
           @created_at::timestamptz
    FROM w, (SELECT unnest(@event_numbers::bigint[]) AS n, unnest(@event_short_ids::text[]) AS short_id,
                    unnest(@event_types::text[]) AS type, unnest(@envelope_heads::text[]) AS head,
                    unnest(@envelope_tails::text[]) AS tail, unnest(@has_balance::bool[]) AS has_balance,
                    unnest(@event_balance_offsets::bigint[]) AS balance_offset) AS e
    RETURNING workspace_id, seq, type
), dispatched AS (
    INSERT INTO event_dispatch (workspace_id, seq, type)
    SELECT i.workspace_id, i.seq, i.type FROM inserted i
    WHERE EXISTS (
        SELECT 1 FROM webhook_endpoints we
        WHERE we.workspace_id = i.workspace_id AND we.enabled
          AND (i.type = ANY (we.event_types) OR '*' = ANY (we.event_types)))
    RETURNING 1
)
SELECT coalesce(w.balance_nano_usd, raise_not_found('workspace'))::bigint AS balance_nano_usd,
       coalesce(w.first_seq, 0)::bigint AS first_seq, w.monthly_cap_nano_usd,
       coalesce(w.month_spend_nano_usd, 0)::bigint AS month_spend_nano_usd, (SELECT count(*) FROM dispatched) AS dispatched
FROM (SELECT) AS one LEFT JOIN w ON true;

-- name: AppendManyMessageRows :many
-- AppendManyMessageRows appends the messages of many conversations in one statement (the
-- group commit), so that no result has to come back before they are written and the
-- statement travels in a pipelined batch (its rows are read with the batch's results, after
-- COMMIT: each message's conversation, seq and version, the row's xmin as AgentTurnState
-- reads it, so that the turn can keep what it wrote: converse's historyCache). Each of @ids, in the workspace at the same place of
-- @workspace_ids, gets @counts messages: those whose @conversation_ids is its id, numbered
-- after its last seq by their @positions (1..count). The rows are locked in id order (FOR NO
-- KEY UPDATE, the UPDATE's own lock, which leaves alone the KEY SHARE of rows inserted with a
-- reference to them), as every batch locks them, so that two batches never wait for each
-- other in a cycle. A conversation that is not its workspace's fails the statement as not
-- found (raise_not_found): the batch may travel with COMMIT.
WITH input AS (
    SELECT unnest(@workspace_ids::uuid[]) AS workspace_id, unnest(@ids::uuid[]) AS id, unnest(@counts::int[]) AS n
), locked AS (
    SELECT c.id, i.n FROM conversations c JOIN input i ON c.workspace_id = i.workspace_id AND c.id = i.id
    ORDER BY c.id FOR NO KEY UPDATE OF c
), reserved AS (
    UPDATE conversations c SET message_seq = c.message_seq + l.n, updated_at = now()
    FROM locked l WHERE c.id = l.id
    RETURNING c.id, c.message_seq - l.n AS last_seq
)
INSERT INTO messages (workspace_id, conversation_id, seq, role, content, tool_calls, tool_results)
SELECT m.workspace_id, m.conversation_id, coalesce(r.last_seq, raise_not_found('conversation')) + m.pos,
       m.role, m.content, m.tool_calls, m.tool_results
FROM (SELECT unnest(@message_workspace_ids::uuid[]) AS workspace_id, unnest(@conversation_ids::uuid[]) AS conversation_id,
             unnest(@positions::int[]) AS pos, unnest(@roles::text[]) AS role, unnest(@contents::text[]) AS content,
             unnest(@tool_calls::json[]) AS tool_calls, unnest(@tool_results::json[]) AS tool_results) AS m
LEFT JOIN reserved r ON r.id = m.conversation_id
RETURNING conversation_id, seq, xmin::text::bigint AS version;

