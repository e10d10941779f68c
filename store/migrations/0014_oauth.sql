-- +goose Up
-- MCP over OAuth (oauth/): clients registered dynamically (RFC 7591), one-time authorization
-- codes, and grants holding the hashes of an access token and its refresh token.

-- A registered client belongs to no workspace: anyone may register one before signing in
-- (that is the point of dynamic registration). It holds nothing but a name and where codes
-- may be sent; every code and grant made for it carries the workspace of the user who
-- approved it.
CREATE TABLE oauth_clients (
    id            text PRIMARY KEY,
    name          text NOT NULL,
    redirect_uris text[] NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- A code lives a few minutes and is used once (deleted when exchanged).
CREATE TABLE oauth_codes (
    code_sha256    bytea PRIMARY KEY CHECK (length(code_sha256) = 32),
    workspace_id   uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id      text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    redirect_uri   text NOT NULL,
    code_challenge text NOT NULL,
    expires_at     timestamptz NOT NULL
);

-- A grant is one approval by a user for a client: a short-lived access token and a refresh
-- token, both rotated at each refresh, revoked together. The token acts with the user's
-- role as of each request, in the user's workspace.
CREATE TABLE oauth_grants (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id       uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id            uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id          text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    access_sha256      bytea NOT NULL UNIQUE CHECK (length(access_sha256) = 32),
    access_expires_at  timestamptz NOT NULL,
    refresh_sha256     bytea NOT NULL UNIQUE CHECK (length(refresh_sha256) = 32),
    refresh_expires_at timestamptz NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    last_used_at       timestamptz,
    revoked_at         timestamptz
);
CREATE INDEX oauth_grants_workspace_idx ON oauth_grants (workspace_id, created_at);
