-- name: ClaimIdempotencyKey :execrows
-- ClaimIdempotencyKey inserts the key, or takes it over when it expired or its holder died
-- (lock ran out) with the same body; no row is affected when someone else holds it.
INSERT INTO idempotency_keys (workspace_id, key, request_sha256, locked_until, expires_at)
VALUES (@workspace_id, @key, @request_sha256, now() + sqlc.arg(lock_for)::text::interval, now() + sqlc.arg(retention)::text::interval)
ON CONFLICT (workspace_id, key) DO UPDATE SET
    request_sha256 = excluded.request_sha256, response_short_id = NULL,
    locked_until = excluded.locked_until, created_at = now(), expires_at = excluded.expires_at
WHERE idempotency_keys.expires_at < now()
   OR (idempotency_keys.response_short_id IS NULL AND idempotency_keys.locked_until < now()
       AND idempotency_keys.request_sha256 = excluded.request_sha256);

-- name: IdempotencyKey :one
SELECT request_sha256, response_short_id FROM idempotency_keys WHERE workspace_id = @workspace_id AND key = @key;

-- name: CompleteIdempotencyKey :exec
UPDATE idempotency_keys SET response_short_id = @response_short_id, locked_until = NULL
WHERE workspace_id = @workspace_id AND key = @key;

-- name: ReleaseIdempotencyKey :exec
DELETE FROM idempotency_keys WHERE workspace_id = @workspace_id AND key = @key AND response_short_id IS NULL;

-- name: DeleteExpiredIdempotencyKeys :execrows
DELETE FROM idempotency_keys WHERE expires_at < now();
