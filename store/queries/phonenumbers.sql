-- name: InsertPhoneNumber :one
INSERT INTO phone_numbers (workspace_id, e164, country, provider_sid, monthly_price_credits)
VALUES (@workspace_id, @e164, @country, @provider_sid, @monthly_price_credits)
RETURNING *;

-- name: PhoneNumberByID :one
SELECT * FROM phone_numbers WHERE workspace_id = @workspace_id AND id = @id;

-- name: ListPhoneNumbers :many
SELECT * FROM phone_numbers WHERE workspace_id = @workspace_id
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status)::text)
ORDER BY created_at DESC, id DESC;

-- name: ReleasePhoneNumber :one
UPDATE phone_numbers SET status = 'released', released_at = now(), release_reason = 'user'
WHERE workspace_id = @workspace_id AND id = @id AND status = 'active'
RETURNING *;
