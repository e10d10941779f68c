-- +goose Up
-- The deployed-agent runtime (package converse): the people agents talk with, and each
-- conversation's contact, disclosure and escalation state.

CREATE TABLE contacts (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         text,
    email        text,
    phone        text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX contacts_workspace_idx ON contacts (workspace_id, created_at DESC);

ALTER TABLE conversations
    ADD COLUMN contact_id          uuid REFERENCES contacts (id) ON DELETE SET NULL,
    -- When the AI disclosure was given (text channels: the message after the greeting).
    ADD COLUMN disclosed_at        timestamptz,
    -- The escalation that fired, if any: its trigger, its action and when.
    ADD COLUMN escalation_trigger  text,
    ADD COLUMN escalation_action   text,
    ADD COLUMN escalated_at        timestamptz,
    -- Consecutive turns the agent could not answer (after_2_failed_attempts).
    ADD COLUMN failed_attempts     int NOT NULL DEFAULT 0,
    -- The agent asked for the visitor's contact details and reads the next message for them.
    ADD COLUMN awaiting_contact    boolean NOT NULL DEFAULT false,
    -- A handoff no human picked up in time: when the visitor was told.
    ADD COLUMN pickup_timed_out_at timestamptz,
    ADD CONSTRAINT conversations_status_check CHECK (status IN ('open', 'escalated', 'closed'));
CREATE INDEX conversations_contact_idx ON conversations (contact_id) WHERE contact_id IS NOT NULL;
