-- +goose Up
-- Dashboard people: a user belongs to one workspace with a role. An email signs in to one
-- workspace only (unique across workspaces), so sign-in needs no workspace field.
CREATE TABLE users (
    id                      uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id            uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    email                   text NOT NULL UNIQUE CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
    role                    text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    -- argon2id in the PHC string format; NULL until the user sets a password.
    password_hash           text,
    -- The SHA-256 of the one-time set-password token, and when it stops working.
    set_password_sha256     bytea UNIQUE CHECK (length(set_password_sha256) = 32),
    set_password_expires_at timestamptz,
    -- Bumped by "sign out everywhere" and by a password change: a session remembers the epoch
    -- it was made in, and one of an older epoch is signed out on every replica.
    session_epoch           int NOT NULL DEFAULT 0,
    created_at              timestamptz NOT NULL DEFAULT now(),
    updated_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX users_workspace_idx ON users (workspace_id, email);

-- Dashboard sessions, in the layout of scs's pgxstore (github.com/alexedwards/scs/pgxstore).
-- The one table without workspace_id: a row is found by its random token only, and its data
-- holds the user (whose row carries the workspace).
CREATE TABLE sessions (
    token  text PRIMARY KEY,
    data   bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);

-- Keys get a name (shown in lists), who created them, and when they were last used (to the
-- minute: the stamp is written at most once a minute per key).
ALTER TABLE api_keys ADD COLUMN name text NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN created_by uuid REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
