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

-- name: AgentTurnState :many
-- AgentTurnState is what a turn of a deployed agent reads of its conversation, in one
-- statement: the conversation (by its UUID @id, or its `mc-` @short_id) with its state and
-- contact as AgentConversationState, the version of its agent's row (agent_version: the
-- row's xmin, which every UPDATE changes; 0 when the conversation's agent is gone), and the
-- history window of the turn as HistoryWindow reads it: one row per message of the window, in
-- order; a window without messages is one row whose seq is 0 (a message's seq is 1 or more).
-- When @search_query is not empty, every row also carries what KnowledgeSearchPlan would
-- return for it and the conversation's agent (search_sources, search_lexemes, search_base,
-- search_generation; NULL when the
-- agent has no knowledge base): the search before the model call then needs no round trip of
-- its own to begin. Every message row also carries its version (the row's xmin: every change
-- of the row, an erasure's blanking, changes it); the rows whose seq is from @known_from to
-- @known_to are elided (the caller holds them already: converse's historyCache): their
-- content, tool calls and tool results are not read, so neither detoasted nor sent.
-- Only the head row (the window's first, or the lone row of an empty window) carries the
-- conversation's columns that pgx allocates to scan (its strings, labels, nullable ids and
-- times: hc, read again by its key for that row only), its contact, its agent's version and
-- the search plan, which all hang on hc; on the other rows they are NULL, so a window of 17
-- messages is not 17 copies of the conversation sent and decoded, and the agent's version
-- is not looked up 17 times (it was a subquery of the select list, evaluated per row). hc's
-- OFFSET 0 keeps it a subquery of its own: pulled up into the join, its head condition was
-- a join filter, checked after the conversation, its contact and its agent had been looked
-- up again for every row of the window (of 21 rows, 20 lookups of each thrown away: about a
-- fifth of the statement's time in PostgreSQL); as a condition on the outer row alone it is
-- the subquery's one-time filter, and the other rows look nothing up.
-- No row: no such conversation in the workspace.
SELECT c.id, coalesce(hc.short_id, '')::text AS short_id, coalesce(hc.channel, '')::text AS channel, c.created_at,
       hc.agent_id, coalesce(hc.status, '')::text AS status, hc.labels, hc.contact_id,
       hc.disclosed_at, hc.escalation_trigger, hc.escalation_action, hc.escalated_at, c.failed_attempts,
       c.awaiting_contact, hc.pickup_timed_out_at, hc.assignee_user_id,
       hc.contact_name, hc.contact_email, hc.contact_phone,
       coalesce(hc.agent_version, 0)::bigint AS agent_version,
       coalesce(h.seq, 0)::int AS seq, coalesce(h.version, 0)::bigint AS version, coalesce(h.role, '')::text AS role,
       coalesce(h.seq >= @known_from::int AND h.seq <= @known_to::int, false)::bool AS elided,
       (CASE WHEN h.seq >= @known_from::int AND h.seq <= @known_to::int THEN '' ELSE coalesce(h.content, '') END)::text AS content,
       (CASE WHEN h.seq >= @known_from::int AND h.seq <= @known_to::int THEN NULL ELSE h.tool_calls END)::json AS tool_calls,
       (CASE WHEN h.seq >= @known_from::int AND h.seq <= @known_to::int THEN NULL ELSE h.tool_results END)::json AS tool_results,
       p.sources AS search_sources, p.lexemes AS search_lexemes, coalesce(p.id, '00000000-0000-0000-0000-000000000000')::uuid AS search_base,
       coalesce(p.generation, 0)::bigint AS search_generation
FROM conversations c
LEFT JOIN LATERAL (
    SELECT x.seq, x.version, x.role, x.content, x.tool_calls, x.tool_results, x.seq = min(x.seq) OVER () AS head FROM (
        SELECT w.seq, w.version, w.role, w.content, w.tool_calls, w.tool_results FROM (
            SELECT n.seq, n.version, n.role, n.content, n.tool_calls, n.tool_results,
                   sum(n.bytes) OVER (ORDER BY n.seq DESC) AS tail_bytes
            FROM (SELECT m.seq, m.xmin::text::bigint AS version, m.role, m.content, m.tool_calls, m.tool_results, m.bytes FROM messages m
                  WHERE m.workspace_id = c.workspace_id AND m.conversation_id = c.id AND NOT m.notice
                  ORDER BY m.seq DESC LIMIT @max_messages::int) n
        ) w
        WHERE w.tail_bytes <= @max_bytes::bigint
    ) x
) h ON true
LEFT JOIN LATERAL (
    SELECT hc.short_id, hc.channel, hc.agent_id, hc.status, hc.labels, hc.contact_id, hc.disclosed_at, hc.escalation_trigger,
           hc.escalation_action, hc.escalated_at, hc.pickup_timed_out_at, hc.assignee_user_id,
           k.name AS contact_name, k.email AS contact_email, k.phone AS contact_phone,
           (SELECT a.xmin::text::bigint FROM agents a WHERE a.workspace_id = hc.workspace_id AND a.id = hc.agent_id) AS agent_version
    FROM conversations hc
    LEFT JOIN contacts k ON k.id = hc.contact_id AND k.workspace_id = hc.workspace_id
    WHERE coalesce(h.head, true) AND hc.workspace_id = c.workspace_id AND hc.id = c.id
    OFFSET 0
) hc ON true
LEFT JOIN LATERAL (
    SELECT coalesce((SELECT array_agg(s.id) FROM knowledge_sources s WHERE s.knowledge_base_id = b.id), '{}')::uuid[] AS sources,
           tsvector_to_array(to_tsvector(b.ts_config, @search_query::text))::text[] AS lexemes, b.id, b.generation
    FROM knowledge_bases b WHERE @search_query::text <> '' AND b.workspace_id = c.workspace_id AND b.agent_id = hc.agent_id
) p ON true
WHERE c.workspace_id = @workspace_id AND (c.id = @id OR c.short_id = @short_id)
ORDER BY h.seq;

-- name: OpenAgentConversationWith :one
-- OpenAgentConversationWith opens a conversation of an agent with its first messages (the
-- greeting, the disclosure) in one statement: the conversation tied to its agent, contact and
-- disclosure time as OpenAgentConversation ties it, the seqs 1..n of its n messages reserved,
-- and the messages. It does what CreateConversation, OpenAgentConversation and
-- AppendMessages do, in one round trip.
WITH conv AS (
    INSERT INTO conversations (id, workspace_id, short_id, channel, agent_id, contact_id, disclosed_at, message_seq)
    VALUES (@id, @workspace_id, @short_id, @channel, @agent_id, sqlc.narg(contact_id), sqlc.narg(disclosed_at), cardinality(@roles::text[]))
    RETURNING created_at
), msgs AS (
    INSERT INTO messages (workspace_id, conversation_id, seq, role, content)
    SELECT @workspace_id, @id, generate_subscripts(@roles::text[], 1), unnest(@roles::text[]), unnest(@contents::text[])
)
SELECT created_at FROM conv;
