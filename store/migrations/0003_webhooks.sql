-- +goose Up
-- Webhook endpoints, their delivery attempts, and the dispatch queue of the outbox.

CREATE TABLE webhook_endpoints (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id         uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    short_id             text NOT NULL UNIQUE CHECK (short_id LIKE 'whe-%'),
    url                  text NOT NULL,
    event_types          text[] NOT NULL,
    description          text,
    enabled              boolean NOT NULL DEFAULT true,
    -- The signing secret must be readable to sign deliveries (HMAC), unlike API keys.
    secret               text NOT NULL CHECK (secret LIKE 'whsec_%'),
    consecutive_failures int NOT NULL DEFAULT 0,
    disabled_at          timestamptz,
    disabled_reason      text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_workspace_idx ON webhook_endpoints (workspace_id, created_at DESC);

CREATE TABLE webhook_attempts (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    endpoint_id   uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id      text NOT NULL,
    event_type    text NOT NULL,
    attempt       int NOT NULL,
    succeeded     boolean NOT NULL,
    response_code int,
    duration_ms   int NOT NULL,
    error         text,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_attempts_endpoint_idx ON webhook_attempts (endpoint_id, created_at DESC);

-- Events not yet turned into delivery jobs, written with each event. The relay claims rows
-- with SKIP LOCKED and deletes them in the transaction that inserts their jobs, so each
-- event fans out exactly once; the events themselves are never updated.
CREATE TABLE event_dispatch (
    workspace_id uuid NOT NULL,
    seq          bigint NOT NULL,
    type         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, seq),
    FOREIGN KEY (workspace_id, seq) REFERENCES events (workspace_id, seq) ON DELETE CASCADE
);
