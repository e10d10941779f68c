-- +goose Up
-- Contacts as a managed resource (tags, lists, consent, soft delete), outbound campaigns with
-- their per-contact sends, and the workspace's phone numbers.

-- Contacts so far were only captured by the runtime (collect_contact, a chat's contact), and
-- the runtime keeps creating them without naming a source: the default 'conversation' is
-- theirs; /api/contacts and imports name theirs. phone holds E.164 for contacts made through
-- /api/contacts (the runtime may have stored what a visitor typed; a campaign skips a phone
-- that is not E.164).
ALTER TABLE contacts
    ADD COLUMN tags          text[] NOT NULL DEFAULT '{}',
    ADD COLUMN source        text NOT NULL DEFAULT 'conversation' CHECK (source IN ('api', 'import', 'conversation')),
    ADD COLUMN consent_sms   boolean NOT NULL DEFAULT false,
    ADD COLUMN consent_calls boolean NOT NULL DEFAULT false,
    -- Soft delete: a deleted contact is hidden and never messaged, and can be restored.
    ADD COLUMN deleted_at    timestamptz;
CREATE INDEX contacts_tags_idx ON contacts USING gin (tags);
CREATE INDEX contacts_phone_idx ON contacts (workspace_id, phone) WHERE phone IS NOT NULL;

-- Named contact lists; a contact belongs to any number of them.
CREATE TABLE contact_lists (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (name <> ''),
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX contact_lists_name_idx ON contact_lists (workspace_id, lower(name));

CREATE TABLE contact_list_members (
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    list_id      uuid NOT NULL REFERENCES contact_lists (id) ON DELETE CASCADE,
    contact_id   uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    added_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (list_id, contact_id)
);
CREATE INDEX contact_list_members_contact_idx ON contact_list_members (contact_id);

CREATE TABLE campaigns (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name            text NOT NULL CHECK (name <> ''),
    status          text NOT NULL DEFAULT 'draft'
                    CHECK (status IN ('draft', 'scheduled', 'running', 'paused', 'completed', 'cancelled')),
    agent_id        uuid REFERENCES agents (id) ON DELETE SET NULL,
    deployment_id   uuid REFERENCES deployments (id) ON DELETE SET NULL,
    -- {list_ids: [uuid], tags: [text], contact_ids: [uuid]}: a contact is in the audience when
    -- it matches any of them.
    audience        jsonb NOT NULL DEFAULT '{}',
    first_message   text,
    -- Schedule: not before start_at (NULL: as soon as started); only between window_start and
    -- window_end ('HH:MM', NULL: any time) in timezone (IANA; NULL: UTC).
    start_at        timestamptz,
    window_start    text,
    window_end      text,
    timezone        text,
    rate_per_minute int NOT NULL DEFAULT 10 CHECK (rate_per_minute BETWEEN 1 AND 600),
    -- Why a campaign is paused ('user', 'agent_disabled'), NULL otherwise.
    paused_reason   text,
    sent_count      int NOT NULL DEFAULT 0,
    failed_count    int NOT NULL DEFAULT 0,
    skipped_count   int NOT NULL DEFAULT 0,
    started_at      timestamptz,
    completed_at    timestamptz,
    cancelled_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX campaigns_workspace_idx ON campaigns (workspace_id, created_at DESC);
CREATE INDEX campaigns_agent_idx ON campaigns (agent_id) WHERE agent_id IS NOT NULL;
CREATE INDEX campaigns_running_idx ON campaigns (status) WHERE status IN ('scheduled', 'running');

-- One row per contact a campaign decided about, written in the transaction that decides:
-- the unique key is what makes a send happen at most once per contact, across restarts and
-- replicas. status 'sending' is committed before the provider is called; a crash between the
-- two leaves it 'sending' and the contact is not messaged again.
CREATE TABLE campaign_sends (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id        uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    campaign_id         uuid NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    contact_id          uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    status              text NOT NULL CHECK (status IN ('sending', 'sent', 'failed', 'skipped')),
    -- For skipped: no_consent, no_phone, deleted; for failed: the provider's message.
    reason              text,
    conversation_id     uuid REFERENCES conversations (id) ON DELETE SET NULL,
    provider_message_id text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (campaign_id, contact_id)
);
CREATE INDEX campaign_sends_workspace_idx ON campaign_sends (workspace_id, campaign_id);

CREATE TABLE phone_numbers (
    id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id          uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    e164                  text NOT NULL CHECK (e164 ~ '^\+[1-9][0-9]{6,14}$'),
    country               text NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
    -- The provider's id of the purchased number (Twilio's PN... sid).
    provider_sid          text NOT NULL,
    -- Monthly price in credits (1 credit = 0.01 USD), as quoted and charged at purchase.
    monthly_price_credits int NOT NULL CHECK (monthly_price_credits >= 0),
    status                text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'released')),
    created_at            timestamptz NOT NULL DEFAULT now(),
    released_at           timestamptz
);
CREATE INDEX phone_numbers_workspace_idx ON phone_numbers (workspace_id, created_at DESC);
CREATE UNIQUE INDEX phone_numbers_active_idx ON phone_numbers (e164) WHERE status = 'active';
