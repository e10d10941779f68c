-- +goose Up
-- Monthly renewals of phone numbers, and the reasons campaigns pause for money.

-- paid_through: the end of the period already paid; the renewal job charges the next month
-- once it is reached. A number bought before this migration paid its first month at purchase.
ALTER TABLE phone_numbers
    ADD COLUMN paid_through   timestamptz,
    -- Why a released number was released: 'user' (DELETE /api/phone-numbers/{id}) or 'unpaid'
    -- (the renewal could not be paid for the whole grace period).
    ADD COLUMN release_reason text CHECK (release_reason IN ('user', 'unpaid')),
    -- When the renewal first failed to be paid (NULL: paid up); the grace period runs from
    -- paid_through, this only tells the user since when.
    ADD COLUMN renewal_failed_at timestamptz;
UPDATE phone_numbers SET paid_through = created_at + interval '1 month';
UPDATE phone_numbers SET release_reason = 'user' WHERE status = 'released';
ALTER TABLE phone_numbers ALTER COLUMN paid_through SET NOT NULL,
    ALTER COLUMN paid_through SET DEFAULT now() + interval '1 month';
CREATE INDEX phone_numbers_due_idx ON phone_numbers (paid_through) WHERE status = 'active';

-- One row per number and period charged: the unique key is what makes a renewal charge happen
-- at most once per number and month, across replicas, restarts and racing jobs.
CREATE TABLE phone_number_renewals (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    phone_number_id uuid NOT NULL REFERENCES phone_numbers (id) ON DELETE CASCADE,
    period_start    timestamptz NOT NULL,
    period_end      timestamptz NOT NULL,
    credits         int NOT NULL CHECK (credits >= 0),
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (phone_number_id, period_start)
);
CREATE INDEX phone_number_renewals_workspace_idx ON phone_number_renewals (workspace_id, phone_number_id);
