-- +goose Up
-- Workspaces own everything; every other table carries workspace_id.
CREATE TABLE workspaces (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name             text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
    -- Money is kept in billionths of a dollar: exact integer arithmetic, and fine enough for
    -- single tokens of the cheapest model.
    balance_nano_usd bigint NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- API keys: only the SHA-256 of the secret is stored.
CREATE TABLE api_keys (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id   uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    role           text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    secret_sha256  bytea NOT NULL UNIQUE CHECK (length(secret_sha256) = 32),
    -- The first characters of the key, so a person can tell keys apart in a list.
    display_prefix text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    revoked_at     timestamptz
);
CREATE INDEX api_keys_workspace_idx ON api_keys (workspace_id, created_at);
