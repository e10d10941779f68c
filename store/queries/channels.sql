-- name: CreateChannel :one
INSERT INTO channels (id, workspace_id, provider, name, config, status, setup, inbound_token, address, secrets, secrets_key_id)
VALUES (@id, @workspace_id, @provider, @name, @config, @status, sqlc.narg(setup), @inbound_token, sqlc.narg(address),
        sqlc.narg(secrets), sqlc.narg(secrets_key_id))
RETURNING id;

-- name: ChannelByID :one
SELECT c.id, c.workspace_id, c.provider, c.name, c.config, d.agent_id AS inbound_agent, c.created_at,
       c.status, c.setup, c.inbound_token, c.address, c.secrets, c.secrets_key_id,
       (SELECT max(m.created_at) FROM channel_messages m WHERE m.channel_id = c.id AND m.direction = 'inbound') AS last_inbound_at, c.updated_at
FROM channels c LEFT JOIN deployments d ON d.channel_id = c.id AND d.inbound
WHERE c.workspace_id = @workspace_id AND c.id = @id;

-- name: ListChannels :many
SELECT c.id, c.workspace_id, c.provider, c.name, c.config, d.agent_id AS inbound_agent, c.created_at,
       c.status, c.setup, c.inbound_token, c.address, c.secrets, c.secrets_key_id,
       (SELECT max(m.created_at) FROM channel_messages m WHERE m.channel_id = c.id AND m.direction = 'inbound') AS last_inbound_at, c.updated_at
FROM channels c LEFT JOIN deployments d ON d.channel_id = c.id AND d.inbound
WHERE c.workspace_id = @workspace_id AND (sqlc.narg(provider)::text IS NULL OR c.provider = sqlc.narg(provider)::text)
ORDER BY c.created_at DESC, c.id;

-- name: ChannelByToken :one
-- ChannelByToken finds the channel an inbound webhook is for: the token is the credential of
-- the URL, so the workspace comes from the row.
SELECT c.id, c.workspace_id, c.provider, c.name, c.config, d.agent_id AS inbound_agent, c.created_at,
       c.status, c.setup, c.inbound_token, c.address, c.secrets, c.secrets_key_id,
       (SELECT max(m.created_at) FROM channel_messages m WHERE m.channel_id = c.id AND m.direction = 'inbound') AS last_inbound_at, c.updated_at
FROM channels c LEFT JOIN deployments d ON d.channel_id = c.id AND d.inbound
WHERE c.provider = @provider AND c.inbound_token = @inbound_token;

-- name: UpdateChannel :exec
UPDATE channels SET name = @name, config = @config, status = @status, setup = sqlc.narg(setup), address = sqlc.narg(address),
    secrets = sqlc.narg(secrets), secrets_key_id = sqlc.narg(secrets_key_id), updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: DeleteChannel :execrows
-- DeleteChannel removes a channel; its deployments go with it (ON DELETE CASCADE).
DELETE FROM channels WHERE workspace_id = @workspace_id AND id = @id;

-- name: CountConnectedChannels :one
SELECT count(*) FROM channels WHERE workspace_id = @workspace_id AND provider = @provider AND status = 'connected';

-- name: NumberTakenElsewhere :one
-- NumberTakenElsewhere says whether another workspace owns the number (bought it).
SELECT EXISTS (SELECT 1 FROM phone_numbers WHERE e164 = @e164 AND status = 'active' AND workspace_id <> @workspace_id);

-- name: NumberBought :one
SELECT provider_sid FROM phone_numbers WHERE workspace_id = @workspace_id AND e164 = @e164 AND status = 'active';

-- name: DeployByType :one
INSERT INTO deployments (workspace_id, agent_id, channel_type, config) VALUES (@workspace_id, @agent_id, @channel_type, @config)
RETURNING id;

-- name: LockChannel :one
-- LockChannel makes two deploys to one channel decide in turn.
SELECT provider, name, status FROM channels WHERE workspace_id = @workspace_id AND id = @id FOR UPDATE;

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

-- name: AgentInboundSeats :many
-- AgentInboundSeats are the connected channels whose inbound seat the agent holds: the
-- traffic that can reach it.
SELECT c.id, c.provider, c.name FROM deployments d JOIN channels c ON c.id = d.channel_id
WHERE d.workspace_id = @workspace_id AND d.agent_id = @agent_id AND d.inbound AND c.status = 'connected'
ORDER BY c.created_at, c.id;

-- name: DeploymentAgent :one
SELECT workspace_id, agent_id FROM deployments WHERE id = @id;

-- name: DeploymentByID :one
SELECT d.workspace_id, d.agent_id, d.channel_type, d.config, w.name AS workspace_name, w.status AS workspace_status, w.balance_nano_usd
FROM deployments d JOIN workspaces w ON w.id = d.workspace_id WHERE d.id = @id;

-- name: ChannelSecretsToReseal :many
-- ChannelSecretsToReseal are channels whose credentials are sealed with one of the given
-- (previous) keys, locked for resealing.
SELECT id, secrets, secrets_key_id FROM channels WHERE secrets_key_id = ANY(@key_ids::text[])
ORDER BY id LIMIT @max FOR UPDATE SKIP LOCKED;

-- name: ResealChannelSecrets :exec
UPDATE channels SET secrets = @secrets, secrets_key_id = @secrets_key_id WHERE id = @id;
