package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"switchboard/store/internal/dbsqlc"
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
	Secret              string // the signing secret, in plaintext: sealed when stored, opened when read
	ConsecutiveFailures int
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

func (q *queries) endpoint(e dbsqlc.WebhookEndpoint, err error) (WebhookEndpoint, error) {
	if err != nil {
		return WebhookEndpoint{}, notFound("webhook endpoint", err)
	}
	return q.toEndpoint(e)
}

func (q *queries) toEndpoint(e dbsqlc.WebhookEndpoint) (WebhookEndpoint, error) {
	secret, err := q.openWebhookSecret(e.ShortID, e.Secret, e.SecretCiphertext, e.SecretKeyID)
	return WebhookEndpoint{ID: e.ID, WorkspaceID: e.WorkspaceID, ShortID: e.ShortID, URL: e.URL, EventTypes: e.EventTypes,
		Description: e.Description, Enabled: e.Enabled, Secret: secret, ConsecutiveFailures: e.ConsecutiveFailures,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}, err
}

// CreateWebhookEndpoint stores a new endpoint, its secret sealed (ErrNoSecretsKey without a
// keyring).
func (q *queries) CreateWebhookEndpoint(ctx context.Context, e WebhookEndpoint) (WebhookEndpoint, error) {
	sealed, err := q.sealWebhookSecret(e.ShortID, e.Secret)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	return q.endpoint(q.sql.CreateWebhookEndpoint(ctx, q.db, dbsqlc.CreateWebhookEndpointParams{WorkspaceID: e.WorkspaceID,
		ShortID: e.ShortID, URL: e.URL, EventTypes: e.EventTypes, Description: e.Description,
		SecretCiphertext: sealed.Ciphertext, SecretKeyID: &sealed.KeyID}))
}

// endpointRef splits a reference into the UUID or the `whe-` id it names; the queries match
// whichever is set.
func endpointRef(ref string) (*uuid.UUID, *string) {
	if id, err := uuid.Parse(ref); err == nil {
		return &id, nil
	}
	return nil, &ref
}

// WebhookEndpointByRef finds an endpoint of the workspace by `whe-` id or UUID.
func (q *queries) WebhookEndpointByRef(ctx context.Context, workspaceID uuid.UUID, ref string) (WebhookEndpoint, error) {
	id, short := endpointRef(ref)
	return q.endpoint(q.sql.WebhookEndpointByRef(ctx, q.db, dbsqlc.WebhookEndpointByRefParams{WorkspaceID: workspaceID, ID: id, ShortID: short}))
}

// ListWebhookEndpoints lists the workspace's endpoints, newest first.
func (q *queries) ListWebhookEndpoints(ctx context.Context, workspaceID uuid.UUID, limit int) ([]WebhookEndpoint, error) {
	rows, err := q.sql.ListWebhookEndpoints(ctx, q.db, dbsqlc.ListWebhookEndpointsParams{WorkspaceID: workspaceID, Max: limit})
	if err != nil {
		return nil, err
	}
	out := make([]WebhookEndpoint, len(rows))
	for i, r := range rows {
		if out[i], err = q.toEndpoint(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// WebhookUpdate lists the fields to change; nil leaves a field as it is.
type WebhookUpdate struct {
	URL         *string
	EventTypes  []string
	Description *string
	Enabled     *bool
}

// UpdateWebhookEndpoint applies an update. Enabling an endpoint clears its failure state.
func (q *queries) UpdateWebhookEndpoint(ctx context.Context, workspaceID uuid.UUID, ref string, u WebhookUpdate) (WebhookEndpoint, error) {
	id, short := endpointRef(ref)
	return q.endpoint(q.sql.UpdateWebhookEndpoint(ctx, q.db, dbsqlc.UpdateWebhookEndpointParams{WorkspaceID: workspaceID, ID: id,
		ShortID: short, URL: u.URL, EventTypes: u.EventTypes, SetDescription: u.Description != nil, Description: u.Description,
		Enabled: u.Enabled}))
}

// DeleteWebhookEndpoint removes an endpoint and its attempt history.
func (q *queries) DeleteWebhookEndpoint(ctx context.Context, workspaceID uuid.UUID, ref string) error {
	id, short := endpointRef(ref)
	n, err := q.sql.DeleteWebhookEndpoint(ctx, q.db, dbsqlc.DeleteWebhookEndpointParams{WorkspaceID: workspaceID, ID: id, ShortID: short})
	return affected("webhook endpoint", n, err)
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

// RecordWebhookAttempt stores an attempt and updates the endpoint's failure count, in one
// statement; after disableAfter consecutive failures the endpoint is disabled. It reports
// whether the endpoint is (now) disabled.
func (q *queries) RecordWebhookAttempt(ctx context.Context, a WebhookAttempt, disableAfter int) (bool, error) {
	enabled, err := q.sql.RecordWebhookAttempt(ctx, q.db, dbsqlc.RecordWebhookAttemptParams{WorkspaceID: a.WorkspaceID,
		EndpointID: a.EndpointID, EventID: a.EventID, EventType: a.EventType, Attempt: a.Attempt, Succeeded: a.Succeeded,
		ResponseCode: a.ResponseCode, DurationMs: int(a.Duration.Milliseconds()), Error: a.Error, DisableAfter: disableAfter})
	if isForeignKeyViolation(err) {
		return true, &NotFoundError{What: "webhook endpoint"}
	}
	return !enabled, err
}

// DeliveryTarget reads, in one round trip, the endpoint and the event one delivery needs:
// a NotFoundError naming "webhook endpoint" when the endpoint was deleted, or "event".
func (q *queries) DeliveryTarget(ctx context.Context, workspaceID, endpointID uuid.UUID, seq int64) (WebhookEndpoint, Event, error) {
	r, err := q.sql.DeliveryTarget(ctx, q.db, dbsqlc.DeliveryTargetParams{WorkspaceID: workspaceID, EndpointID: endpointID, Seq: seq})
	if err != nil {
		return WebhookEndpoint{}, Event{}, notFound("webhook endpoint", err)
	}
	ep, err := q.toEndpoint(r.WebhookEndpoint)
	if err != nil {
		return WebhookEndpoint{}, Event{}, err
	}
	if r.EventShortID == nil || r.EventType == nil || r.EventEnvelope == nil || r.EventCreatedAt == nil {
		return ep, Event{}, &NotFoundError{What: "event"}
	}
	return ep, Event{WorkspaceID: workspaceID, Seq: seq, ShortID: *r.EventShortID, Type: *r.EventType,
		Envelope: json.RawMessage(*r.EventEnvelope), CreatedAt: *r.EventCreatedAt}, nil
}

// ListWebhookAttempts lists an endpoint's recent attempts, newest first.
func (q *queries) ListWebhookAttempts(ctx context.Context, workspaceID, endpointID uuid.UUID, limit int) ([]WebhookAttempt, error) {
	rows, err := q.sql.ListWebhookAttempts(ctx, q.db, dbsqlc.ListWebhookAttemptsParams{WorkspaceID: workspaceID,
		EndpointID: endpointID, Max: limit})
	return mapRows(rows, toAttempt), err
}

func toAttempt(r dbsqlc.ListWebhookAttemptsRow) WebhookAttempt {
	return WebhookAttempt{EndpointID: r.EndpointID, WorkspaceID: r.WorkspaceID, EventID: r.EventID, EventType: r.EventType,
		Attempt: r.Attempt, Succeeded: r.Succeeded, ResponseCode: r.ResponseCode,
		Duration: time.Duration(r.DurationMs) * time.Millisecond, Error: r.Error, CreatedAt: r.CreatedAt}
}

// isForeignKeyViolation is PostgreSQL's foreign_key_violation: for an attempt, its endpoint
// was deleted (workspaces are never deleted).
func isForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}
