-- name: CreateKey :one
INSERT INTO api_keys (workspace_id, role, secret_sha256, display_prefix)
VALUES (@workspace_id, @role, @secret_sha256, @display_prefix)
RETURNING *;

-- name: ListKeys :many
SELECT * FROM api_keys WHERE workspace_id = @workspace_id ORDER BY created_at, id;

-- name: RevokeKey :one
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = @id
RETURNING *;

-- name: Authenticate :one
SELECT k.id AS key_id, k.role, k.secret_sha256, w.id AS workspace_id, w.name AS workspace_name,
       w.status AS workspace_status, w.balance_nano_usd, w.monthly_cap_nano_usd,
       w.spend_month, w.month_spend_nano_usd
FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
WHERE k.secret_sha256 = @secret_sha256 AND k.revoked_at IS NULL;

-- name: EnsureOwnerKey :exec
INSERT INTO api_keys (workspace_id, role, secret_sha256, display_prefix)
VALUES (@workspace_id, 'owner', @secret_sha256, @display_prefix)
ON CONFLICT (secret_sha256) DO NOTHING;

-- name: LiveKeys :many
-- LiveKeys returns those of the given keys that may still work: not revoked, and of an
-- active workspace. Open streams re-check their keys with it.
SELECT k.id FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
WHERE k.id = ANY(@ids::uuid[]) AND k.revoked_at IS NULL AND w.status = 'active';

-- name: KeyByID :one
SELECT * FROM api_keys WHERE workspace_id = @workspace_id AND id = @id;

-- name: CreateNamedKey :one
INSERT INTO api_keys (workspace_id, role, secret_sha256, display_prefix, name, created_by)
VALUES (@workspace_id, @role, @secret_sha256, @display_prefix, @name, @created_by)
RETURNING *;

-- name: TouchKey :exec
-- TouchKey stamps a key's last use, at most once a minute, so that a busy key costs one
-- write a minute rather than one a request.
UPDATE api_keys SET last_used_at = now()
WHERE id = @id AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');
