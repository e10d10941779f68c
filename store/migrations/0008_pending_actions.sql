-- +goose Up
-- A risky or spend tool call of a turn is parked here until the user replies `YES <code>` on
-- the next turn of the same conversation (approved), says anything else (rejected), or lets
-- it expire. The row is written in the transaction of the turn that parked it; its
-- resolution, in the transaction that emits confirmation.resolved.
CREATE TABLE pending_actions (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    short_id        text NOT NULL UNIQUE CHECK (short_id LIKE 'act_%'),
    conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    code            text NOT NULL CHECK (code ~ '^[0-9]{4,}$'),
    tool            text NOT NULL,
    arguments       jsonb NOT NULL,
    summary         text NOT NULL,
    -- who asked: the key (NULL for the development user) and its role at the time
    key_id          uuid REFERENCES api_keys (id) ON DELETE SET NULL,
    role            text NOT NULL,
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    result          jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    resolved_at     timestamptz
);
-- A code names one pending action of its conversation.
CREATE UNIQUE INDEX pending_actions_code_idx ON pending_actions (conversation_id, code) WHERE status = 'pending';
CREATE INDEX pending_actions_conversation_idx ON pending_actions (workspace_id, conversation_id, created_at DESC);
-- The expiry sweep looks only at what is still pending.
CREATE INDEX pending_actions_expiry_idx ON pending_actions (expires_at) WHERE status = 'pending';
