-- name: CreateOAuthClient :one
INSERT INTO oauth_clients (id, name, redirect_uris) VALUES (@id, @name, @redirect_uris)
RETURNING *;

-- name: OAuthClient :one
SELECT * FROM oauth_clients WHERE id = @id;

-- name: CreateOAuthCode :exec
INSERT INTO oauth_codes (code_sha256, workspace_id, user_id, client_id, redirect_uri, code_challenge, expires_at)
VALUES (@code_sha256, @workspace_id, @user_id, @client_id, @redirect_uri, @code_challenge, @expires_at);

-- name: TakeOAuthCode :one
-- TakeOAuthCode uses up a code: it is deleted whether or not it is still valid.
DELETE FROM oauth_codes WHERE code_sha256 = @code_sha256
RETURNING *;

-- name: CreateOAuthGrant :one
INSERT INTO oauth_grants (workspace_id, user_id, client_id, access_sha256, access_expires_at, refresh_sha256, refresh_expires_at)
VALUES (@workspace_id, @user_id, @client_id, @access_sha256, @access_expires_at, @refresh_sha256, @refresh_expires_at)
RETURNING *;

-- name: RefreshOAuthGrant :one
-- RefreshOAuthGrant rotates both tokens of the live grant whose refresh token hashes to
-- old_refresh_sha256, for the client that holds it.
UPDATE oauth_grants SET access_sha256 = @access_sha256, access_expires_at = @access_expires_at,
    refresh_sha256 = @refresh_sha256, refresh_expires_at = @refresh_expires_at
WHERE refresh_sha256 = @old_refresh_sha256 AND client_id = @client_id
  AND revoked_at IS NULL AND refresh_expires_at > now()
RETURNING *;

-- name: OAuthPrincipal :one
-- OAuthPrincipal is who a live access token acts as: its user, with the user's role and
-- workspace as of now.
SELECT g.id AS grant_id, g.access_sha256, u.id AS user_id, u.email, u.role, w.id AS workspace_id, w.name AS workspace_name,
       w.status AS workspace_status, w.balance_nano_usd, w.monthly_cap_nano_usd,
       w.spend_month, w.month_spend_nano_usd
FROM oauth_grants g JOIN users u ON u.id = g.user_id AND u.workspace_id = g.workspace_id
JOIN workspaces w ON w.id = g.workspace_id
WHERE g.access_sha256 = @access_sha256 AND g.revoked_at IS NULL AND g.access_expires_at > now();

-- name: TouchOAuthGrant :exec
-- TouchOAuthGrant stamps a grant's last use, at most once a minute.
UPDATE oauth_grants SET last_used_at = now()
WHERE id = @id AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute');

-- name: ListOAuthGrants :many
-- ListOAuthGrants lists the grants of a workspace that still work (or could be refreshed).
SELECT g.id, g.user_id, u.email AS user_email, u.role AS user_role, g.client_id, c.name AS client_name,
       g.created_at, g.last_used_at, g.refresh_expires_at
FROM oauth_grants g JOIN users u ON u.id = g.user_id JOIN oauth_clients c ON c.id = g.client_id
WHERE g.workspace_id = @workspace_id AND g.revoked_at IS NULL AND g.refresh_expires_at > now()
ORDER BY g.created_at DESC, g.id;

-- name: OAuthGrantRole :one
-- OAuthGrantRole is the user of a grant of the workspace and the user's role.
SELECT g.user_id, u.role FROM oauth_grants g JOIN users u ON u.id = g.user_id
WHERE g.workspace_id = @workspace_id AND g.id = @id;

-- name: RevokeOAuthGrant :execrows
UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, now())
WHERE workspace_id = @workspace_id AND id = @id;

-- name: RevokeOAuthToken :execrows
-- RevokeOAuthToken revokes the grant holding an access or refresh token (RFC 7009) of the
-- client.
UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, now())
WHERE (access_sha256 = @sha256 OR refresh_sha256 = @sha256) AND client_id = @client_id;

-- name: DeleteExpiredOAuthCodes :execrows
-- DeleteExpiredOAuthCodes removes codes past their expiry that were never exchanged.
DELETE FROM oauth_codes WHERE expires_at < now();
