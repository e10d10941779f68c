-- name: CreateChannel :one
INSERT INTO channels (workspace_id, provider, name, config) VALUES (@workspace_id, @provider, @name, @config)
RETURNING id;

-- name: ChannelByID :one
SELECT c.id, c.workspace_id, c.provider, c.name, c.config, d.agent_id AS inbound_agent, c.created_at
FROM channels c LEFT JOIN deployments d ON d.channel_id = c.id AND d.inbound
WHERE c.workspace_id = @workspace_id AND c.id = @id;

-- name: ListChannels :many
SELECT c.id, c.workspace_id, c.provider, c.name, c.config, d.agent_id AS inbound_agent, c.created_at
FROM channels c LEFT JOIN deployments d ON d.channel_id = c.id AND d.inbound
WHERE c.workspace_id = @workspace_id
ORDER BY c.created_at DESC, c.id;

-- name: DeployByType :one
INSERT INTO deployments (workspace_id, agent_id, channel_type, config) VALUES (@workspace_id, @agent_id, @channel_type, @config)
RETURNING id;

-- name: LockChannel :one
-- LockChannel makes two deploys to one channel decide in turn.
SELECT provider, name FROM channels WHERE workspace_id = @workspace_id AND id = @id FOR UPDATE;

-- name: InboundHolder :one
SELECT agent_id FROM deployments WHERE channel_id = @channel_id AND inbound;

-- name: VacateInboundSeat :exec
UPDATE deployments SET inbound = false, updated_at = now() WHERE channel_id = @channel_id AND inbound;

-- name: DeployToChannel :one
INSERT INTO deployments (workspace_id, agent_id, channel_type, channel_id, inbound, config)
VALUES (@workspace_id, @agent_id, @channel_type, @channel_id, @inbound, @config)
ON CONFLICT (agent_id, channel_id) WHERE channel_id IS NOT NULL
DO UPDATE SET inbound = excluded.inbound OR deployments.inbound, config = excluded.config, updated_at = now()
RETURNING id, inbound;

-- name: AgentDeployments :many
SELECT channel_type, id FROM deployments WHERE workspace_id = @workspace_id AND agent_id = @agent_id ORDER BY created_at;

-- name: DeploymentAgent :one
SELECT workspace_id, agent_id FROM deployments WHERE id = @id;

-- name: DeploymentByID :one
SELECT d.workspace_id, d.agent_id, d.channel_type, d.config, w.name AS workspace_name, w.status AS workspace_status, w.balance_nano_usd
FROM deployments d JOIN workspaces w ON w.id = d.workspace_id WHERE d.id = @id;
