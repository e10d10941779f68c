-- +goose Up
-- Background responses exist before their turn has a conversation.
ALTER TABLE responses ALTER COLUMN conversation_id DROP NOT NULL;
ALTER TABLE responses ADD COLUMN background boolean NOT NULL DEFAULT false;
-- The sweep looks for background responses that never finished.
CREATE INDEX responses_unfinished_idx ON responses (created_at) WHERE status IN ('queued', 'in_progress');

-- Idempotency-Key replay. A key is claimed by the request that inserts it; locked_until
-- lets a later request take over a claim whose holder died; the stored response answers
-- retries until expires_at.
CREATE TABLE idempotency_keys (
    workspace_id      uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    key               text NOT NULL,
    request_sha256    bytea NOT NULL,
    response_short_id text,
    locked_until      timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    expires_at        timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, key)
);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (expires_at);
