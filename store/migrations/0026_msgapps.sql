-- +goose Up
-- The messaging apps (msgapp_1 … msgapp_4: WhatsApp, Messenger, Instagram, Telegram; package
-- msgapps). Their people are app user ids, not phone numbers: a contact is found by the id the
-- app gives (a wa_id, a page-scoped id, a chat id) and created with the name the app gives.

-- A contact's id in one messaging app of the workspace: the next message from it finds the
-- same contact.
CREATE TABLE contact_app_ids (
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    app          text NOT NULL,
    app_user_id  text NOT NULL,
    contact_id   uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, app, app_user_id)
);
CREATE INDEX contact_app_ids_contact_idx ON contact_app_ids (contact_id);

-- What kind of message arrived: text runs the agent; anything else (image, audio, sticker,
-- location, reaction...) gets one reply saying the agent reads text, and a placeholder.
ALTER TABLE channel_messages ADD COLUMN kind text NOT NULL DEFAULT 'text';

-- A conversation whose customer-service window closed (WhatsApp, Messenger, Instagram: 24 hours
-- after the person's last message): a free-form reply was not sent, and only an approved
-- template may reach them until they write again.
ALTER TABLE conversation_threads ADD COLUMN needs_template_at timestamptz;

