-- name: CreateUser :one
INSERT INTO users (workspace_id, email, role, set_password_sha256, set_password_expires_at)
VALUES (@workspace_id, @email, @role, @set_password_sha256, @set_password_expires_at)
RETURNING *;

-- name: UserByEmail :one
SELECT u.*, w.name AS workspace_name FROM users u JOIN workspaces w ON w.id = u.workspace_id
WHERE u.email = @email;

-- name: UserByID :one
SELECT u.*, w.name AS workspace_name FROM users u JOIN workspaces w ON w.id = u.workspace_id
WHERE u.workspace_id = @workspace_id AND u.id = @id;

-- name: UserBySetPasswordToken :one
SELECT u.*, w.name AS workspace_name FROM users u JOIN workspaces w ON w.id = u.workspace_id
WHERE u.set_password_sha256 = @set_password_sha256 AND u.set_password_expires_at > now();

-- name: SetPassword :one
-- SetPassword stores a new password hash, uses up the set-password token and signs the user
-- out of every existing session.
UPDATE users SET password_hash = @password_hash, set_password_sha256 = NULL, set_password_expires_at = NULL,
    session_epoch = session_epoch + 1, updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id
RETURNING *;

-- name: BumpSessionEpoch :exec
UPDATE users SET session_epoch = session_epoch + 1, updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: ListUsers :many
SELECT * FROM users WHERE workspace_id = @workspace_id ORDER BY email;

-- name: SessionPrincipal :one
-- SessionPrincipal is who a dashboard session acts as, with its workspace's state, as of now.
SELECT u.id AS user_id, u.email, u.role, u.session_epoch, w.id AS workspace_id, w.name AS workspace_name,
       w.status AS workspace_status, w.balance_nano_usd, w.monthly_cap_nano_usd,
       w.spend_month, w.month_spend_nano_usd
FROM users u JOIN workspaces w ON w.id = u.workspace_id
WHERE u.id = @id;

-- name: EnsureDevelopmentUser :one
-- EnsureDevelopmentUser makes the development user of a workspace (an owner, no password).
INSERT INTO users (workspace_id, email, role) VALUES (@workspace_id, @email, 'owner')
ON CONFLICT (email) DO UPDATE SET updated_at = users.updated_at
RETURNING *;

-- name: DeleteExpiredSessions :execrows
DELETE FROM sessions WHERE expiry < now();

-- name: UserForUpdate :one
-- UserForUpdate reads a user of the workspace and locks it until the transaction ends
-- (a role change checks the current role, then changes it).
SELECT * FROM users WHERE workspace_id = @workspace_id AND id = @id FOR UPDATE;

-- name: SetUserRole :one
UPDATE users SET role = @role, updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id
RETURNING *;
