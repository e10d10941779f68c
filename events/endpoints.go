package events

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/netguard"
	"switchboard/shortid"
	"switchboard/store"
)

// Webhook endpoints are managed here for /v1/webhooks and the dashboard's Webhooks page
// alike, so both refuse the same things with the same words:
//   - reading needs access.Read; creating, changing, deleting and redelivering need
//     access.Webhooks (admin and above);
//   - an endpoint's URL must pass the SSRF guard (netguard) when it is set;
//   - a subscription is normalised: duplicates dropped, `*` alone when present;
//   - a redelivery goes to an enabled endpoint only, as one delivery job.

// Endpoints manages a workspace's webhook endpoints and queues redeliveries.
type Endpoints struct {
	store *store.Store
	guard netguard.Guard
	jobs  *river.Client[pgx.Tx] // inserts the redelivery jobs; it need not work them
}

// NewEndpoints returns the service; guard judges endpoint URLs, jobs inserts redeliveries.
func NewEndpoints(st *store.Store, guard netguard.Guard, jobs *river.Client[pgx.Tx]) *Endpoints {
	return &Endpoints{store: st, guard: guard, jobs: jobs}
}

// NewEndpoint is what creating an endpoint takes; nil EventTypes subscribes to every event.
type NewEndpoint struct {
	URL         string
	EventTypes  []string
	Description *string
}

// EndpointChange is what updating an endpoint takes; nil fields stay as they are.
type EndpointChange struct {
	URL         *string
	EventTypes  []string // nil: unchanged
	Description *string
	Enabled     *bool
}

// Create registers an endpoint for p's workspace and returns it with its signing secret.
func (s *Endpoints) Create(ctx context.Context, p store.Principal, in NewEndpoint) (store.WebhookEndpoint, error) {
	if err := access.Check(p.Access(), access.Webhooks, "Creating webhook endpoints"); err != nil {
		return store.WebhookEndpoint{}, err
	}
	if err := s.checkURL(ctx, in.URL); err != nil {
		return store.WebhookEndpoint{}, err
	}
	types := []string{"*"}
	if in.EventTypes != nil {
		types = EventTypes(in.EventTypes)
	}
	return s.store.CreateWebhookEndpoint(ctx, store.WebhookEndpoint{WorkspaceID: p.WorkspaceID, ShortID: shortid.New(shortid.Webhook),
		URL: in.URL, EventTypes: types, Description: in.Description, Secret: NewSecret()})
}

// Update changes an endpoint of p's workspace, found by `whe-` id or UUID.
func (s *Endpoints) Update(ctx context.Context, p store.Principal, ref string, in EndpointChange) (store.WebhookEndpoint, error) {
	if err := access.Check(p.Access(), access.Webhooks, "Changing webhook endpoints"); err != nil {
		return store.WebhookEndpoint{}, err
	}
	if in.URL != nil {
		if err := s.checkURL(ctx, *in.URL); err != nil {
			return store.WebhookEndpoint{}, err
		}
	}
	u := store.WebhookUpdate{URL: in.URL, Description: in.Description, Enabled: in.Enabled}
	if in.EventTypes != nil {
		u.EventTypes = EventTypes(in.EventTypes)
	}
	e, err := s.store.UpdateWebhookEndpoint(ctx, p.WorkspaceID, ref, u)
	return e, apierr.WithParam(err, "id")
}

// Delete removes an endpoint of p's workspace.
func (s *Endpoints) Delete(ctx context.Context, p store.Principal, ref string) error {
	if err := access.Check(p.Access(), access.Webhooks, "Deleting webhook endpoints"); err != nil {
		return err
	}
	return apierr.WithParam(s.store.DeleteWebhookEndpoint(ctx, p.WorkspaceID, ref), "id")
}

// Get finds an endpoint of p's workspace by `whe-` id or UUID.
func (s *Endpoints) Get(ctx context.Context, p store.Principal, ref string) (store.WebhookEndpoint, error) {
	if err := access.Check(p.Access(), access.Read, "Reading webhook endpoints"); err != nil {
		return store.WebhookEndpoint{}, err
	}
	e, err := s.store.WebhookEndpointByRef(ctx, p.WorkspaceID, ref)
	return e, apierr.WithParam(err, "id")
}

// List lists up to limit endpoints of p's workspace.
func (s *Endpoints) List(ctx context.Context, p store.Principal, limit int) ([]store.WebhookEndpoint, error) {
	if err := access.Check(p.Access(), access.Read, "Listing webhook endpoints"); err != nil {
		return nil, err
	}
	return s.store.ListWebhookEndpoints(ctx, p.WorkspaceID, limit)
}

// Attempts lists the latest limit delivery attempts to the endpoint ref, newest first.
func (s *Endpoints) Attempts(ctx context.Context, p store.Principal, ref string, limit int) ([]store.WebhookAttempt, error) {
	e, err := s.Get(ctx, p, ref)
	if err != nil {
		return nil, err
	}
	return s.store.ListWebhookAttempts(ctx, p.WorkspaceID, e.ID, limit)
}

// Redeliver queues the event eventID (`evt_` id) for delivery again to the endpoint ref,
// which must be enabled, and returns both.
func (s *Endpoints) Redeliver(ctx context.Context, p store.Principal, ref, eventID string) (store.WebhookEndpoint, store.Event, error) {
	if err := access.Check(p.Access(), access.Webhooks, "Redelivering webhook events"); err != nil {
		return store.WebhookEndpoint{}, store.Event{}, err
	}
	e, err := s.Get(ctx, p, ref)
	if err != nil {
		return e, store.Event{}, err
	}
	if !e.Enabled {
		return e, store.Event{}, apierr.Conflict("webhook_endpoint_disabled",
			"The endpoint is disabled; enable it first (PATCH it with {\"enabled\": true}, or Enable on the dashboard's Webhooks page).")
	}
	ev, err := s.store.EventByShortID(ctx, p.WorkspaceID, eventID)
	if err != nil {
		return e, ev, apierr.WithParam(err, "event_id")
	}
	_, err = s.jobs.Insert(ctx, DeliveryArgs{WorkspaceID: p.WorkspaceID, EndpointID: e.ID, EventSeq: ev.Seq}, nil)
	return e, ev, err
}

// EventTypes normalises a subscription: duplicates dropped, and `*` alone when present.
func EventTypes(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range in {
		if t == "*" {
			return []string{"*"}
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// checkURL refuses, naming the field, a URL the SSRF guard would not let deliveries reach.
func (s *Endpoints) checkURL(ctx context.Context, url string) error {
	if err := s.guard.CheckURL(ctx, url); err != nil {
		return apierr.Invalid("url", "url_not_allowed", "%s", strings.TrimPrefix(err.Error(), "address not allowed: "))
	}
	return nil
}
