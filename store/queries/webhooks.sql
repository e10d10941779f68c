-- Endpoints are addressed by their `whe-` id or their UUID: the caller sets exactly one of
-- id and short_id (both columns are indexed, so the OR costs two index probes).

-- name: CreateWebhookEndpoint :one
INSERT INTO webhook_endpoints (workspace_id, short_id, url, event_types, description, secret_ciphertext, secret_key_id)
VALUES (@workspace_id, @short_id, @url, @event_types, sqlc.narg(description), @secret_ciphertext, @secret_key_id)
RETURNING *;

-- name: WebhookEndpointByRef :one
SELECT * FROM webhook_endpoints
WHERE workspace_id = @workspace_id AND (id = sqlc.narg(id) OR short_id = sqlc.narg(short_id));

-- name: ListWebhookEndpoints :many
SELECT * FROM webhook_endpoints WHERE workspace_id = @workspace_id
ORDER BY created_at DESC, id LIMIT @max::int;

-- name: UpdateWebhookEndpoint :one
-- UpdateWebhookEndpoint leaves NULL fields as they are; enabling clears the failure state.
UPDATE webhook_endpoints SET
    url = coalesce(sqlc.narg(url), url),
    event_types = coalesce(sqlc.narg(event_types)::text[], event_types),
    description = CASE WHEN @set_description::boolean THEN sqlc.narg(description) ELSE description END,
    enabled = coalesce(sqlc.narg(enabled)::boolean, enabled),
    consecutive_failures = CASE WHEN sqlc.narg(enabled)::boolean THEN 0 ELSE consecutive_failures END,
    disabled_at = CASE WHEN sqlc.narg(enabled)::boolean THEN NULL ELSE disabled_at END,
    disabled_reason = CASE WHEN sqlc.narg(enabled)::boolean THEN NULL ELSE disabled_reason END,
    updated_at = now()
WHERE workspace_id = @workspace_id AND (id = sqlc.narg(id) OR short_id = sqlc.narg(short_id))
RETURNING *;

-- name: DeleteWebhookEndpoint :execrows
DELETE FROM webhook_endpoints
WHERE workspace_id = @workspace_id AND (id = sqlc.narg(id) OR short_id = sqlc.narg(short_id));

-- name: DeliveryTarget :one
-- DeliveryTarget reads what one delivery needs in one round trip: the endpoint (no row when
-- it was deleted) and the event (NULL columns when it is not found).
SELECT sqlc.embed(e), v.short_id AS event_short_id, v.type AS event_type, v.envelope AS event_envelope,
    v.created_at AS event_created_at
FROM webhook_endpoints e
LEFT JOIN events v ON v.workspace_id = e.workspace_id AND v.seq = @seq
WHERE e.workspace_id = @workspace_id AND e.id = @endpoint_id;

-- name: RecordWebhookAttempt :one
-- RecordWebhookAttempt stores an attempt and, in the same statement (one round trip, one
-- commit), resets the endpoint's failure count on success or counts a failure, disabling the
-- endpoint once disable_after failures are consecutive. It answers whether the endpoint is
-- enabled. A success when the count is already 0 changes nothing, and updates no row: it
-- must not, because every delivery to an endpoint would then wait for the one before it to
-- commit, on the endpoint's row lock (one endpoint's deliveries were about 360 a second under
-- the soak, all queued on that lock). The attempt's insert still checks the endpoint (its
-- foreign key): a deleted endpoint is an error.
WITH attempt AS (
    INSERT INTO webhook_attempts (workspace_id, endpoint_id, event_id, event_type, attempt, succeeded, response_code, duration_ms, error)
    VALUES (@workspace_id, @endpoint_id, @event_id, @event_type, @attempt, @succeeded, sqlc.narg(response_code), @duration_ms, sqlc.narg(error))
), counted AS (
    UPDATE webhook_endpoints SET
        consecutive_failures = CASE WHEN @succeeded::boolean THEN 0 ELSE consecutive_failures + 1 END,
        enabled = enabled AND (@succeeded::boolean OR consecutive_failures + 1 < @disable_after::int),
        disabled_at = CASE WHEN enabled AND NOT @succeeded::boolean AND consecutive_failures + 1 >= @disable_after::int
            THEN now() ELSE disabled_at END,
        disabled_reason = CASE WHEN enabled AND NOT @succeeded::boolean AND consecutive_failures + 1 >= @disable_after::int
            THEN 'disabled after ' || @disable_after::int || ' consecutive failed deliveries' ELSE disabled_reason END
    WHERE workspace_id = @workspace_id AND id = @endpoint_id AND (NOT @succeeded::boolean OR consecutive_failures > 0)
    RETURNING enabled
)
SELECT coalesce((SELECT enabled FROM counted), true)::boolean AS enabled;

-- name: ListWebhookAttempts :many
SELECT endpoint_id, workspace_id, event_id, event_type, attempt, succeeded, response_code, duration_ms, error, created_at
FROM webhook_attempts WHERE workspace_id = @workspace_id AND endpoint_id = @endpoint_id
ORDER BY created_at DESC, id LIMIT @max::int;

-- The secrets queries below are an operator's maintenance across workspaces (sealing the
-- secrets of old endpoints, rotating the key), like revoking a key: they filter by key,
-- not by workspace.

-- name: WebhookSecretKeys :many
-- WebhookSecretKeys counts the endpoints per key id of their secret; '' counts the secrets
-- still in plaintext.
SELECT coalesce(secret_key_id, '')::text AS key_id, count(*)::int AS endpoints
FROM webhook_endpoints GROUP BY 1 ORDER BY 1;

-- name: WebhookSecretsToSeal :many
-- WebhookSecretsToSeal locks a batch of endpoints whose secret is in plaintext or sealed
-- with one of the given keys.
SELECT id, short_id, secret, secret_ciphertext, secret_key_id FROM webhook_endpoints
WHERE secret IS NOT NULL OR secret_key_id = ANY(@key_ids::text[])
ORDER BY id LIMIT @max::int
FOR UPDATE;

-- name: SealWebhookSecret :exec
UPDATE webhook_endpoints SET secret = NULL, secret_ciphertext = @secret_ciphertext, secret_key_id = @secret_key_id
WHERE id = @id;
