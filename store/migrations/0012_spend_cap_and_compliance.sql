-- +goose Up
-- The monthly spend cap of a workspace (nano-USD; NULL: no cap), and the spend of the current
-- calendar month (UTC). The counter lives on the workspace row, which Settle already locks and
-- updates with each charge, so it moves in the same statement as the balance and the
-- authentication lookup reads it for free. spend_month is the first day of the month the
-- counter is for; a charge in a later month starts the counter again.
ALTER TABLE workspaces
    ADD COLUMN monthly_cap_nano_usd bigint CHECK (monthly_cap_nano_usd > 0),
    ADD COLUMN spend_month date NOT NULL DEFAULT date_trunc('month', now() AT TIME ZONE 'UTC')::date,
    ADD COLUMN month_spend_nano_usd bigint NOT NULL DEFAULT 0;

-- This month's spend so far, from the ledger.
UPDATE workspaces w SET spend_month = date_trunc('month', now() AT TIME ZONE 'UTC')::date,
    month_spend_nano_usd = coalesce((SELECT -sum(l.amount_nano_usd) FROM ledger l
        WHERE l.workspace_id = w.id AND l.amount_nano_usd < 0
          AND l.created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'), 0);

-- Acceptances of the outbound compliance acknowledgment: which version, by whom, when. Only
-- an owner or admin accepts, on the dashboard's Settings page; a new version needs a new
-- acceptance, so the rows of older versions stay as the record.
CREATE TABLE compliance_acceptances (
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    version      text NOT NULL CHECK (version <> ''),
    user_id      uuid REFERENCES users (id) ON DELETE SET NULL,
    -- The user's email and role when accepting: the record outlives the user.
    user_email   text NOT NULL,
    user_role    text NOT NULL CHECK (user_role IN ('owner', 'admin')),
    accepted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, version)
);

