-- name: CreateAgent :one
INSERT INTO agents (workspace_id, name, blueprint) VALUES (@workspace_id, @name, @blueprint)
RETURNING *;

-- name: CreateKnowledgeBase :one
INSERT INTO knowledge_bases (workspace_id, agent_id) VALUES (@workspace_id, @agent_id)
RETURNING id;

-- name: KnowledgeBaseOf :one
SELECT id FROM knowledge_bases WHERE workspace_id = @workspace_id AND agent_id = @agent_id;

-- name: AgentByID :one
SELECT * FROM agents WHERE workspace_id = @workspace_id AND id = @id;

-- name: AgentsNamed :many
-- AgentsNamed matches names containing pattern, which the caller escapes for LIKE.
SELECT * FROM agents
WHERE workspace_id = @workspace_id AND name ILIKE '%' || @pattern::text || '%' ESCAPE '\'
ORDER BY created_at DESC, id;

-- name: ListAgents :many
-- ListAgents filters by status unless status is empty.
SELECT * FROM agents
WHERE workspace_id = @workspace_id AND (@status::text = '' OR status = @status::text)
ORDER BY created_at DESC, id;

-- name: UpdateAgent :one
UPDATE agents SET name = @name, status = @status, blueprint = @blueprint,
    disclosure_enabled = @disclosure_enabled, disclosure_text = sqlc.narg(disclosure_text),
    disclosure_recording_id = sqlc.narg(disclosure_recording_id), updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id
RETURNING *;

-- name: DeleteAgent :execrows
DELETE FROM agents WHERE workspace_id = @workspace_id AND id = @id;

-- name: LockAgentConversations :exec
-- LockAgentConversations locks, in id order, the conversations a delete of their agent is
-- about to delete (ON DELETE CASCADE, which takes them in its index's order, newest first):
-- the order of a group commit continuing several of them and of a bulk delete.
SELECT id FROM conversations WHERE workspace_id = @workspace_id AND agent_id = @agent_id
ORDER BY id
FOR UPDATE;

-- name: LockAgentCampaigns :exec
-- LockAgentCampaigns locks, in id order, the campaigns a delete of their agent is about to
-- unlink (ON DELETE SET NULL), before the agent's row: a campaign's worker holds its campaign
-- while it opens a conversation with the agent, which takes the agent's KEY SHARE.
SELECT id FROM campaigns WHERE workspace_id = @workspace_id AND agent_id = @agent_id
ORDER BY id
FOR NO KEY UPDATE;

-- name: RecordingKind :one
SELECT kind FROM recordings WHERE workspace_id = @workspace_id AND id = @id;

-- name: CreateRecording :one
INSERT INTO recordings (workspace_id, kind, name) VALUES (@workspace_id, @kind, @name)
RETURNING id;

-- name: CountAgentConversations :one
SELECT count(*) FROM conversations WHERE workspace_id = @workspace_id AND agent_id = @agent_id::uuid;

-- name: AgentConversations :many
SELECT short_id, status, channel, labels, created_at FROM conversations
WHERE workspace_id = @workspace_id AND agent_id = @agent_id::uuid
ORDER BY created_at DESC, id LIMIT @max::int;

-- name: AgentLabelCounts :many
SELECT label::text, count(*) FROM conversations, unnest(labels) AS label
WHERE workspace_id = @workspace_id AND agent_id = @agent_id::uuid
GROUP BY label;

-- name: AgentByIDAnyWorkspace :one
-- AgentByIDAnyWorkspace is for the public test page only: there the unguessable id is the
-- capability.
SELECT * FROM agents WHERE id = @id;

-- name: AgentRuleAnswers :one
-- How many of an agent's turns a rule answered since a time: its turn.completed events whose
-- handled_by names the rule. No column records the rule, the event does (the webhooks and
-- the event feed carry it), so the count reads what partners read. The envelope is text: the
-- primary key's workspace prefix, the type and the time narrow the rows before any parse.
SELECT count(*)::int FROM events
WHERE workspace_id = sqlc.arg(workspace_id)
  AND type = 'turn.completed'
  AND created_at >= sqlc.arg(since)
  AND (envelope::jsonb -> 'data' ->> 'agent_id') = sqlc.arg(agent_id)::text
  AND (envelope::jsonb -> 'data' ->> 'handled_by') = sqlc.arg(rule)::text;

-- name: AgentByIDVersioned :one
-- AgentByIDVersioned is AgentByID with the row's version: its xmin, which every UPDATE of
-- the row changes (AgentTurnState reads it too, to check a copy of the row kept in memory).
SELECT sqlc.embed(agents), agents.xmin::text::bigint AS version FROM agents WHERE workspace_id = @workspace_id AND id = @id;
