-- +goose Up
-- Voice campaigns (issue 41, "Calling out"): a campaign on a telco_voice deployment calls its
-- contacts with answering-machine detection and leaves a voicemail_drop recording to a machine.

-- A contact's own time zone (IANA name; NULL: derived from the phone number, else the
-- campaign's): voice campaigns call only inside their window in it.
ALTER TABLE contacts ADD COLUMN timezone text;

-- The voicemail_drop recording a voice campaign plays to an answering machine (required for
-- voice campaigns; the API refuses to delete it while a campaign that is not over uses it,
-- a finished campaign just loses it).
ALTER TABLE campaigns
    ADD COLUMN voicemail_recording_id uuid REFERENCES recordings (id) ON DELETE SET NULL,
    -- Calls a person answered, and calls a machine answered (a voicemail was left).
    ADD COLUMN answered_count  int NOT NULL DEFAULT 0,
    ADD COLUMN voicemail_count int NOT NULL DEFAULT 0;
CREATE INDEX campaigns_voicemail_recording_idx ON campaigns (voicemail_recording_id) WHERE voicemail_recording_id IS NOT NULL;

-- A campaign call's carrier status (completed, busy, no-answer, failed, canceled) and
-- answering-machine verdict (human, machine_end_beep, ...), each applied once.
ALTER TABLE campaign_sends
    ADD COLUMN call_status text,
    ADD COLUMN answered_by text;

-- The campaign send an outbound call was placed for.
ALTER TABLE voice_calls ADD COLUMN campaign_send_id uuid REFERENCES campaign_sends (id) ON DELETE SET NULL;

-- +goose Down
ALTER TABLE voice_calls DROP COLUMN campaign_send_id;
ALTER TABLE campaign_sends DROP COLUMN answered_by, DROP COLUMN call_status;
DROP INDEX campaigns_voicemail_recording_idx;
ALTER TABLE campaigns DROP COLUMN voicemail_count, DROP COLUMN answered_count, DROP COLUMN voicemail_recording_id;
ALTER TABLE contacts DROP COLUMN timezone;
