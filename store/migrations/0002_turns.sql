-- +goose Up
-- Conversations, their messages, stored responses, the spend ledger and the event outbox.

-- The next event cursor of each workspace. Events take their cursor from this counter in the
-- transaction that writes them; the row lock it needs makes commits of one workspace's
-- events happen in cursor order, so a reader never sees cursor N+1 before cursor N.
ALTER TABLE workspaces ADD COLUMN event_seq bigint NOT NULL DEFAULT 0;

CREATE TABLE conversations (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    short_id     text NOT NULL UNIQUE CHECK (short_id LIKE 'mc-%'),
    channel      text NOT NULL DEFAULT 'api',
    status       text NOT NULL DEFAULT 'open',
    labels       text[] NOT NULL DEFAULT '{}',
    message_seq  int NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversations_workspace_idx ON conversations (workspace_id, created_at DESC);

CREATE TABLE messages (
    workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq             int NOT NULL,
    role            text NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    content         text NOT NULL DEFAULT '',
    tool_calls      jsonb,
    tool_results    jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, seq)
);

CREATE TABLE responses (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id         uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    short_id             text NOT NULL UNIQUE CHECK (short_id LIKE 'resp_%'),
    conversation_id      uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    status               text NOT NULL CHECK (status IN ('queued', 'in_progress', 'completed', 'incomplete', 'failed')),
    model                text NOT NULL,
    -- The response object exactly as returned (text, not jsonb, which would reorder keys),
    -- so a GET or an idempotent replay answers byte for byte what the create answered.
    body                 text NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX responses_workspace_idx ON responses (workspace_id, created_at DESC);

CREATE TABLE ledger (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    -- Negative for spend, positive for credit; nano-USD.
    amount_nano_usd bigint NOT NULL,
    balance_after   bigint NOT NULL,
    category        text NOT NULL,
    model           text,
    input_tokens    bigint NOT NULL DEFAULT 0,
    output_tokens   bigint NOT NULL DEFAULT 0,
    conversation_id uuid REFERENCES conversations (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_workspace_idx ON ledger (workspace_id, created_at DESC);

-- The outbox. envelope is the exact JSON delivered on webhooks and on the SSE feed.
CREATE TABLE events (
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    seq          bigint NOT NULL,
    short_id     text NOT NULL UNIQUE CHECK (short_id LIKE 'evt_%'),
    type         text NOT NULL,
    envelope     text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, seq)
);
