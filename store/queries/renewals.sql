-- name: DuePhoneNumbers :many
-- DuePhoneNumbers lists active numbers of every workspace whose paid period has ended, the
-- longest due first, for the renewal job.
-- Keyset pages: after (after_paid_through, after_id).
SELECT workspace_id, id, paid_through FROM phone_numbers
WHERE status = 'active' AND paid_through <= @now
  AND (paid_through, id) > (@after_paid_through::timestamptz, @after_id::uuid)
ORDER BY paid_through, id
LIMIT @max_rows;

-- name: LockPhoneNumber :one
SELECT * FROM phone_numbers WHERE workspace_id = @workspace_id AND id = @id FOR UPDATE;

-- name: InsertPhoneNumberRenewal :one
-- InsertPhoneNumberRenewal records the charge of one period; no row comes back when that
-- period was already charged.
INSERT INTO phone_number_renewals (workspace_id, phone_number_id, period_start, period_end, credits)
VALUES (@workspace_id, @phone_number_id, @period_start, @period_end, @credits)
ON CONFLICT (phone_number_id, period_start) DO NOTHING
RETURNING *;

-- name: AdvancePhoneNumberPaidThrough :one
UPDATE phone_numbers SET paid_through = @paid_through, renewal_failed_at = NULL
WHERE workspace_id = @workspace_id AND id = @id
RETURNING *;

-- name: MarkPhoneNumberRenewalFailed :exec
UPDATE phone_numbers SET renewal_failed_at = coalesce(renewal_failed_at, now())
WHERE workspace_id = @workspace_id AND id = @id;

-- name: LapsePhoneNumber :one
-- LapsePhoneNumber releases a number whose renewal was not paid within the grace period.
UPDATE phone_numbers SET status = 'released', released_at = now(), release_reason = 'unpaid'
WHERE workspace_id = @workspace_id AND id = @id AND status = 'active'
RETURNING *;

-- name: PhoneNumberRenewals :many
SELECT * FROM phone_number_renewals WHERE workspace_id = @workspace_id AND phone_number_id = @phone_number_id
ORDER BY period_start;
