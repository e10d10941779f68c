-- +goose Up
-- Webchat visitors an operator blocked. A visitor is their webchat conversation (the widget
-- keeps its visitor token, which names that conversation, in the visitor's own storage), so
-- a block names the conversation; the widget's requests with its token are then refused
-- with 403 visitor_blocked. Rows go with the conversation or the workspace.
CREATE TABLE webchat_blocked_visitors (
    workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    reason          text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, conversation_id)
);
CREATE INDEX webchat_blocked_visitors_created_idx ON webchat_blocked_visitors (workspace_id, created_at DESC);
