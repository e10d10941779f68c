-- +goose Up
-- Agents, their knowledge, channels, deployments and recordings.

CREATE TABLE agents (
    id                      uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id            uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name                    text NOT NULL,
    status                  text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
    -- The validated blueprint; name, status and the disclosure settings live in columns.
    blueprint               jsonb NOT NULL,
    disclosure_enabled      boolean NOT NULL DEFAULT true,
    disclosure_text         text,
    disclosure_recording_id uuid,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agents_workspace_idx ON agents (workspace_id, created_at DESC);
CREATE INDEX agents_name_idx ON agents (workspace_id, lower(name));

CREATE TABLE knowledge_bases (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    agent_id     uuid NOT NULL UNIQUE REFERENCES agents (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE knowledge_sources (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id      uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    knowledge_base_id uuid NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    type              text NOT NULL,
    url               text,
    depth             int,
    path              text,
    status            text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'crawling', 'ready', 'failed')),
    error             text,
    pages             int NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- Extracted text, indexed for retrieval with PostgreSQL full-text search.
CREATE TABLE knowledge_chunks (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    source_id    uuid NOT NULL REFERENCES knowledge_sources (id) ON DELETE CASCADE,
    url          text NOT NULL,
    title        text NOT NULL DEFAULT '',
    content      text NOT NULL,
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || content)) STORED
);
CREATE INDEX knowledge_chunks_tsv_idx ON knowledge_chunks USING gin (tsv);
CREATE INDEX knowledge_chunks_source_idx ON knowledge_chunks (source_id);

CREATE TABLE channels (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    provider     text NOT NULL CHECK (provider IN ('webchat', 'telco_voice', 'sms', 'msgapp_1', 'msgapp_2', 'msgapp_3', 'msgapp_4')),
    name         text NOT NULL,
    config       jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX channels_workspace_idx ON channels (workspace_id, created_at DESC);

CREATE TABLE deployments (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    agent_id     uuid NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    channel_type text NOT NULL,
    channel_id   uuid REFERENCES channels (id) ON DELETE CASCADE,
    inbound      boolean NOT NULL DEFAULT false,
    -- Opaque per-deployment settings: stored, never used for routing.
    config       jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
-- A channel has at most one agent answering inbound traffic: the database says so.
CREATE UNIQUE INDEX deployments_inbound_seat_idx ON deployments (channel_id) WHERE inbound;
CREATE UNIQUE INDEX deployments_agent_channel_idx ON deployments (agent_id, channel_id) WHERE channel_id IS NOT NULL;
CREATE INDEX deployments_agent_idx ON deployments (agent_id);

CREATE TABLE recordings (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('disclosure', 'voicemail_drop')),
    name         text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE conversations ADD COLUMN agent_id uuid REFERENCES agents (id) ON DELETE CASCADE;
CREATE INDEX conversations_agent_idx ON conversations (agent_id, created_at DESC) WHERE agent_id IS NOT NULL;
