-- +goose Up
-- Human handoff (package inbox): a person of the workspace takes over a conversation, replies
-- in it, writes internal notes, and hands it back to the agent.

ALTER TABLE conversations
    -- The person holding the conversation: while set, the agent does not answer.
    ADD COLUMN assignee_user_id      uuid REFERENCES users (id) ON DELETE SET NULL,
    ADD COLUMN assigned_at           timestamptz,
    -- When the members who opted in were emailed that it waits unclaimed (once).
    ADD COLUMN unclaimed_notified_at timestamptz,
    -- The handoff summary written when the conversation escalated (the one the
    -- notification email and turn.completed carry), for the person who takes it over.
    ADD COLUMN escalation_summary    text;
-- The inbox lists a workspace's conversations by newest activity (updated_at is bumped by
-- every message appended).
CREATE INDEX conversations_activity_idx ON conversations (workspace_id, updated_at DESC);
-- The queue of escalated conversations, for the waiting count and the unclaimed sweep.
CREATE INDEX conversations_escalated_idx ON conversations (workspace_id, escalated_at)
    WHERE status = 'escalated';

-- A person's reply is an assistant message with its author; a notice ("Ann joined the
-- conversation") is shown to the visitor and in the transcript, but is not part of the
-- model's history.
ALTER TABLE messages
    ADD COLUMN author_user_id uuid,
    ADD COLUMN author_name    text,
    ADD COLUMN notice         boolean NOT NULL DEFAULT false;

-- Internal notes on a conversation: for the team, never sent to the visitor nor shown to
-- the agent.
CREATE TABLE conversation_notes (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    author_user_id  uuid REFERENCES users (id) ON DELETE SET NULL,
    author_name     text NOT NULL,
    body            text NOT NULL CHECK (length(body) BETWEEN 1 AND 4000),
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversation_notes_conversation_idx ON conversation_notes (conversation_id, created_at);

-- How long an escalated conversation may wait unclaimed before the members who opted in
-- are emailed.
ALTER TABLE workspaces
    ADD COLUMN inbox_notify_after_seconds int NOT NULL DEFAULT 120
        CHECK (inbox_notify_after_seconds BETWEEN 30 AND 86400);

-- A person's name as visitors see it ("Ann joined the conversation"); NULL: the part of the
-- email address before the @, capitalized. notify_unclaimed: the person opted in to the
-- unclaimed-conversation emails.
ALTER TABLE users
    ADD COLUMN display_name     text CHECK (length(display_name) BETWEEN 1 AND 80),
    ADD COLUMN notify_unclaimed boolean NOT NULL DEFAULT false;
