-- +goose Up
-- Voice calls (package voice) and recordings (package recordings).
--
-- A recording now holds its audio: the format and duration read from the file by a decoder,
-- its size, and the unguessable token of the URL the carrier fetches it from
-- (PUBLIC_BASE_URL/media/recordings/{token}.{ext}). Rows made before have no audio.
ALTER TABLE recordings
    ADD COLUMN format      text CHECK (format IN ('wav', 'mp3')),
    ADD COLUMN duration_ms int,
    ADD COLUMN size_bytes  int,
    ADD COLUMN audio       bytea,
    -- Two random UUIDs: 244 random bits, as channels' inbound tokens.
    ADD COLUMN media_token text NOT NULL DEFAULT replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');
CREATE UNIQUE INDEX recordings_media_token_idx ON recordings (media_token);
CREATE INDEX recordings_workspace_idx ON recordings (workspace_id, created_at DESC);

-- One phone call on a telco_voice channel, by the carrier's CallSid (a retried webhook finds
-- it again), with its conversation and how it went. ended_at is set once, by the call's status
-- callback: that is what meters a call exactly once.
CREATE TABLE voice_calls (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    channel_id      uuid NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    call_sid        text NOT NULL,
    direction       text NOT NULL DEFAULT 'inbound' CHECK (direction IN ('inbound', 'outbound')),
    remote          text NOT NULL,
    local           text NOT NULL,
    agent_id        uuid REFERENCES agents (id) ON DELETE SET NULL,
    conversation_id uuid REFERENCES conversations (id) ON DELETE SET NULL,
    -- Gathers in a row that heard nothing: the second ends the call.
    silent_gathers  int NOT NULL DEFAULT 0,
    -- How the call ended, for the transcript: the carrier's final status (completed, busy,
    -- no-answer, failed, canceled), and what the flow did (after_hours, no_credit, no_agent,
    -- transferred, voicemail, silence).
    outcome         text,
    carrier_status  text,
    duration_s      int,
    minutes         int,
    voicemail_url   text,
    voicemail_s     int,
    started_at      timestamptz NOT NULL DEFAULT now(),
    ended_at        timestamptz
);
CREATE UNIQUE INDEX voice_calls_sid_idx ON voice_calls (channel_id, call_sid);
CREATE INDEX voice_calls_workspace_idx ON voice_calls (workspace_id, started_at DESC);

-- One thing the caller said and what the agent answers. Written before the model is called,
-- keyed by the turn number in the gather's URL: a retried webhook finds the turn and picks
-- its answer up instead of calling the model again; a slow answer is picked up by the
-- <Redirect> that the carrier follows.
CREATE TABLE voice_turns (
    call_id     uuid NOT NULL REFERENCES voice_calls (id) ON DELETE CASCADE,
    seq         int NOT NULL,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    speech      text NOT NULL,
    -- pending: the model is answering; answered: reply and action are set; failed: no answer.
    status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'answered', 'failed')),
    reply       text,
    -- What follows the reply: listen (the next gather), transfer (dial a person), hangup.
    action      text CHECK (action IN ('listen', 'transfer', 'hangup')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    answered_at timestamptz,
    PRIMARY KEY (call_id, seq)
);

