-- +goose Up
-- Channels become connections that carry traffic (package channels): each has a status, the
-- unguessable token of its inbound URL (PUBLIC_BASE_URL/hooks/{provider}/{token}), its own
-- address (the E.164 number of an SMS channel), its sealed credentials, and when it last
-- received something. Messages that cross a channel are kept with the carrier's id, which is
-- what makes a retried webhook count once; conversations on a channel are threads per remote
-- party; SMS opt-outs are per sender number.

ALTER TABLE channels
    -- connected: traffic flows; needs_setup: `setup` says what is missing. Decided when the
    -- channel is connected or changed (PATCH checks again).
    ADD COLUMN status          text NOT NULL DEFAULT 'needs_setup' CHECK (status IN ('connected', 'needs_setup')),
    ADD COLUMN setup           text,
    ADD COLUMN inbound_token   text,
    -- The channel's own address on its network: an SMS or voice channel's E.164 number.
    ADD COLUMN address         text,
    -- Credentials from config, sealed with SECRETS_KEY (a JSON object of the secret fields),
    -- bound to the channel's id; config keeps only a hint of each.
    ADD COLUMN secrets         bytea,
    ADD COLUMN secrets_key_id  text,
    ADD COLUMN updated_at      timestamptz NOT NULL DEFAULT now();
-- Channels made before: a token each (two random UUIDs: 244 random bits), webchat connected.
UPDATE channels SET inbound_token = replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');
UPDATE channels SET status = 'connected' WHERE provider = 'webchat';
ALTER TABLE channels ALTER COLUMN inbound_token SET NOT NULL;
CREATE UNIQUE INDEX channels_inbound_token_idx ON channels (inbound_token);
-- A number is one channel, in one workspace: nobody connects a number another has connected.
CREATE UNIQUE INDEX channels_address_idx ON channels (provider, address) WHERE address IS NOT NULL;

-- A conversation carried by a channel, with the remote party (the texter's E.164 number):
-- the next message from the same party on the same channel continues it. A table of its own,
-- so that the conversations table (written by every /v1 turn) gains no column or foreign key.
CREATE TABLE conversation_threads (
    conversation_id uuid PRIMARY KEY REFERENCES conversations (id) ON DELETE CASCADE,
    workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    channel_id      uuid NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    remote          text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversation_threads_remote_idx ON conversation_threads (channel_id, remote, created_at DESC);

-- Every message that crossed a channel, both ways. An inbound message is written (with its
-- reply job) before the webhook is answered; the carrier's id makes a retried webhook a
-- no-op. An outbound message is written `sending` before the carrier is called, so that a
-- rerun of its job never sends it twice.
CREATE TABLE channel_messages (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id        uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    channel_id          uuid REFERENCES channels (id) ON DELETE SET NULL,
    direction           text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    provider_message_id text,
    -- The other party and the channel's own address (E.164 numbers for SMS).
    remote              text NOT NULL,
    local               text NOT NULL,
    body                text NOT NULL,
    segments            int NOT NULL DEFAULT 0,
    -- inbound: received (its job is queued), answering, answered, stored (kept, no reply:
    -- no agent, opted out, no credit); outbound: pending (decided, written with the answer
    -- it is), sending (handed to the carrier), then the carrier's queued, sent, delivered,
    -- undelivered or failed.
    status              text NOT NULL CHECK (status IN ('received', 'answering', 'answered', 'stored',
                            'pending', 'sending', 'queued', 'sent', 'delivered', 'undelivered', 'failed')),
    -- Why: an inbound message stored without a reply (no_agent, opted_out, insufficient_quota,
    -- ...), an outbound one that failed (the carrier's words and code).
    reason              text,
    conversation_id     uuid REFERENCES conversations (id) ON DELETE SET NULL,
    -- An outbound message answering an inbound one: at most one reply each.
    reply_to            uuid REFERENCES channel_messages (id) ON DELETE CASCADE,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX channel_messages_provider_idx ON channel_messages (channel_id, direction, provider_message_id)
    WHERE provider_message_id IS NOT NULL;
CREATE UNIQUE INDEX channel_messages_reply_idx ON channel_messages (reply_to) WHERE reply_to IS NOT NULL;
CREATE INDEX channel_messages_conversation_idx ON channel_messages (conversation_id) WHERE conversation_id IS NOT NULL;
CREATE INDEX channel_messages_workspace_idx ON channel_messages (workspace_id, created_at DESC);
-- A channel's last inbound message, read with the channel (no column to update: every inbound
-- webhook updating the channel's row would queue them all on its lock).
CREATE INDEX channel_messages_inbound_idx ON channel_messages (channel_id, created_at DESC) WHERE direction = 'inbound';

-- Who said STOP to which of the workspace's numbers (carrier rules: per sender), until START.
CREATE TABLE sms_opt_outs (
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    sender       text NOT NULL,
    remote       text NOT NULL,
    opted_out_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, sender, remote)
);

-- Delivery receipts of campaign messages: the carrier's final word on a sent message.
ALTER TABLE campaign_sends ADD COLUMN delivery text CHECK (delivery IN ('delivered', 'undelivered'));
CREATE INDEX campaign_sends_provider_idx ON campaign_sends (provider_message_id) WHERE provider_message_id IS NOT NULL;
ALTER TABLE campaigns
    ADD COLUMN delivered_count   int NOT NULL DEFAULT 0,
    ADD COLUMN undelivered_count int NOT NULL DEFAULT 0;

-- A delivery report that arrives before the send that it reports on recorded the carrier's
-- id (the carrier can call back within milliseconds): kept here, and applied by that send's
-- transaction.
CREATE TABLE early_delivery_reports (
    channel_id          uuid NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    provider_message_id text NOT NULL,
    status              text NOT NULL,
    reason              text,
    received_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX early_delivery_reports_idx ON early_delivery_reports (channel_id, provider_message_id);
