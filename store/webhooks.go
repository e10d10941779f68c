package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// WebhookEndpoint is a registered receiver of a workspace's events.
type WebhookEndpoint struct {
	ID                  uuid.UUID
	WorkspaceID         uuid.UUID
	ShortID             string
	URL                 string
	EventTypes          []string
	Description         *string
	Enabled             bool
	Secret              string
	ConsecutiveFailures int
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

const endpointColumns = `id, workspace_id, short_id, url, event_types, description, enabled, secret, consecutive_failures, created_at, updated_at`

func scanEndpoint(row interface{ Scan(...any) error }) (WebhookEndpoint, error) {
	var e WebhookEndpoint
	err := row.Scan(&e.ID, &e.WorkspaceID, &e.ShortID, &e.URL, &e.EventTypes, &e.Description, &e.Enabled, &e.Secret,
		&e.ConsecutiveFailures, &e.CreatedAt, &e.UpdatedAt)
	return e, notFound(err)
}

// CreateWebhookEndpoint stores a new endpoint.
func (s *Store) CreateWebhookEndpoint(ctx context.Context, e WebhookEndpoint) (WebhookEndpoint, error) {
	return scanEndpoint(s.pool.QueryRow(ctx,
		`INSERT INTO webhook_endpoints (workspace_id, short_id, url, event_types, description, secret)
		 VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+endpointColumns,
		e.WorkspaceID, e.ShortID, e.URL, e.EventTypes, e.Description, e.Secret))
}

// endpointRef matches an endpoint by its `whe-` id or its UUID.
func endpointRef(ref string) (string, any) {
	if id, err := uuid.Parse(ref); err == nil {
		return "id = $2", id
	}
	return "short_id = $2", ref
}

// WebhookEndpointByRef finds an endpoint of the workspace by `whe-` id or UUID.
func (s *Store) WebhookEndpointByRef(ctx context.Context, workspaceID uuid.UUID, ref string) (WebhookEndpoint, error) {
	cond, arg := endpointRef(ref)
	return scanEndpoint(s.pool.QueryRow(ctx,
		`SELECT `+endpointColumns+` FROM webhook_endpoints WHERE workspace_id = $1 AND `+cond, workspaceID, arg))
}

// ListWebhookEndpoints lists the workspace's endpoints, newest first.
func (s *Store) ListWebhookEndpoints(ctx context.Context, workspaceID uuid.UUID, limit int) ([]WebhookEndpoint, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT `+endpointColumns+` FROM webhook_endpoints WHERE workspace_id = $1 ORDER BY created_at DESC, id LIMIT $2`,
		workspaceID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookEndpoint, error) { return scanEndpoint(r) })
}

// WebhookUpdate lists the fields to change; nil leaves a field as it is.
type WebhookUpdate struct {
	URL         *string
	EventTypes  []string
	Description *string
	Enabled     *bool
}

// UpdateWebhookEndpoint applies an update. Enabling an endpoint clears its failure state.
func (s *Store) UpdateWebhookEndpoint(ctx context.Context, workspaceID uuid.UUID, ref string, u WebhookUpdate) (WebhookEndpoint, error) {
	cond, arg := endpointRef(ref)
	return scanEndpoint(s.pool.QueryRow(ctx,
		`UPDATE webhook_endpoints SET
			url = coalesce($3, url),
			event_types = coalesce($4, event_types),
			description = CASE WHEN $5::boolean THEN $6 ELSE description END,
			enabled = coalesce($7, enabled),
			consecutive_failures = CASE WHEN $7 THEN 0 ELSE consecutive_failures END,
			disabled_at = CASE WHEN $7 THEN NULL ELSE disabled_at END,
			disabled_reason = CASE WHEN $7 THEN NULL ELSE disabled_reason END,
			updated_at = now()
		 WHERE workspace_id = $1 AND `+cond+` RETURNING `+endpointColumns,
		workspaceID, arg, u.URL, u.EventTypes, u.Description != nil, u.Description, u.Enabled))
}

// DeleteWebhookEndpoint removes an endpoint and its attempt history.
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, workspaceID uuid.UUID, ref string) error {
	cond, arg := endpointRef(ref)
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhook_endpoints WHERE workspace_id = $1 AND `+cond, workspaceID, arg)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// WebhookAttempt is one delivery attempt, kept for operators.
type WebhookAttempt struct {
	EndpointID   uuid.UUID
	WorkspaceID  uuid.UUID
	EventID      string
	EventType    string
	Attempt      int
	Succeeded    bool
	ResponseCode *int
	Duration     time.Duration
	Error        *string
	CreatedAt    time.Time
}

// RecordWebhookAttempt stores an attempt and updates the endpoint's failure count; after
// disableAfter consecutive failures the endpoint is disabled. It reports whether the endpoint
// is (now) disabled.
func (s *Store) RecordWebhookAttempt(ctx context.Context, a WebhookAttempt, disableAfter int) (bool, error) {
	var disabled bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx,
			`INSERT INTO webhook_attempts (workspace_id, endpoint_id, event_id, event_type, attempt, succeeded, response_code, duration_ms, error)
			 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			a.WorkspaceID, a.EndpointID, a.EventID, a.EventType, a.Attempt, a.Succeeded, a.ResponseCode, a.Duration.Milliseconds(), a.Error); err != nil {
			return err
		}
		var enabled bool
		err := tx.QueryRow(ctx,
			`UPDATE webhook_endpoints SET
				consecutive_failures = CASE WHEN $3 THEN 0 ELSE consecutive_failures + 1 END,
				enabled = enabled AND ($3 OR consecutive_failures + 1 < $4),
				disabled_at = CASE WHEN enabled AND NOT $3 AND consecutive_failures + 1 >= $4 THEN now() ELSE disabled_at END,
				disabled_reason = CASE WHEN enabled AND NOT $3 AND consecutive_failures + 1 >= $4
					THEN 'disabled after ' || $4 || ' consecutive failed deliveries' ELSE disabled_reason END
			 WHERE workspace_id = $1 AND id = $2 RETURNING enabled`,
			a.WorkspaceID, a.EndpointID, a.Succeeded, disableAfter).Scan(&enabled)
		disabled = !enabled
		return notFound(err)
	})
	return disabled, err
}

// ListWebhookAttempts lists an endpoint's recent attempts, newest first.
func (s *Store) ListWebhookAttempts(ctx context.Context, workspaceID, endpointID uuid.UUID, limit int) ([]WebhookAttempt, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT endpoint_id, workspace_id, event_id, event_type, attempt, succeeded, response_code, duration_ms, error, created_at
		 FROM webhook_attempts WHERE workspace_id = $1 AND endpoint_id = $2 ORDER BY created_at DESC, id LIMIT $3`,
		workspaceID, endpointID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookAttempt, error) {
		var a WebhookAttempt
		var ms int64
		err := r.Scan(&a.EndpointID, &a.WorkspaceID, &a.EventID, &a.EventType, &a.Attempt, &a.Succeeded, &a.ResponseCode, &ms, &a.Error, &a.CreatedAt)
		a.Duration = time.Duration(ms) * time.Millisecond
		return a, err
	})
}
