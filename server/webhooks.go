package server

import (
	"context"
	"strings"

	"switchboard/apierr"
	"switchboard/events"
	"switchboard/gen/v1api"
	"switchboard/shortid"
	"switchboard/store"
)

func endpointObject(e store.WebhookEndpoint) v1api.WebhookEndpoint {
	types := make([]v1api.WebhookEventType, len(e.EventTypes))
	for i, t := range e.EventTypes {
		types[i] = v1api.WebhookEventType(t)
	}
	return v1api.WebhookEndpoint{Id: e.ShortID, Object: "webhook_endpoint", Url: e.URL, EventTypes: types,
		Description: e.Description, Enabled: e.Enabled, CreatedAt: e.CreatedAt.Unix(), UpdatedAt: e.UpdatedAt.Unix()}
}

// eventTypes normalizes a subscription: duplicates dropped, and `*` alone when present.
func eventTypes(in *[]v1api.WebhookEventType) []string {
	if in == nil {
		return []string{"*"}
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range *in {
		if t == "*" {
			return []string{"*"}
		}
		if !seen[string(t)] {
			seen[string(t)] = true
			out = append(out, string(t))
		}
	}
	return out
}

func (h *v1Handlers) checkURL(ctx context.Context, url string) error {
	if err := h.s.guard.CheckURL(ctx, url); err != nil {
		return apierr.Invalid("url", "url_not_allowed", "%s", strings.TrimPrefix(err.Error(), "address not allowed: "))
	}
	return nil
}

// endpoint finds an endpoint of the caller's workspace by `whe-` id or UUID.
func (h *v1Handlers) endpoint(ctx context.Context, ref string) (store.WebhookEndpoint, error) {
	p, _ := principalFrom(ctx)
	e, err := h.s.store.WebhookEndpointByRef(ctx, p.WorkspaceID, ref)
	return e, apierr.WithParam(err, "id")
}

func (h *v1Handlers) CreateWebhook(ctx context.Context, req v1api.CreateWebhookRequestObject) (v1api.CreateWebhookResponseObject, error) {
	p, _ := principalFrom(ctx)
	if err := h.checkURL(ctx, req.Body.Url); err != nil {
		return nil, err
	}
	secret := events.NewSecret()
	e, err := h.s.store.CreateWebhookEndpoint(ctx, store.WebhookEndpoint{WorkspaceID: p.WorkspaceID, ShortID: shortid.New(shortid.Webhook),
		URL: req.Body.Url, EventTypes: eventTypes(req.Body.EventTypes), Description: req.Body.Description, Secret: secret})
	if err != nil {
		return nil, err
	}
	o := endpointObject(e)
	return v1api.CreateWebhook201JSONResponse{Body: v1api.WebhookEndpointWithSecret{Id: o.Id, Object: "webhook_endpoint", Url: o.Url, EventTypes: o.EventTypes,
		Description: o.Description, Enabled: o.Enabled, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, Secret: secret}}, nil
}

func (h *v1Handlers) ListWebhooks(ctx context.Context, req v1api.ListWebhooksRequestObject) (v1api.ListWebhooksResponseObject, error) {
	p, _ := principalFrom(ctx)
	limit := 100
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	list, err := h.s.store.ListWebhookEndpoints(ctx, p.WorkspaceID, limit)
	if err != nil {
		return nil, err
	}
	body := v1api.WebhookList{Object: "list", Data: make([]v1api.WebhookEndpoint, 0, len(list))}
	for _, e := range list {
		body.Data = append(body.Data, endpointObject(e))
	}
	return v1api.ListWebhooks200JSONResponse{Body: body}, nil
}

func (h *v1Handlers) GetWebhook(ctx context.Context, req v1api.GetWebhookRequestObject) (v1api.GetWebhookResponseObject, error) {
	e, err := h.endpoint(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return v1api.GetWebhook200JSONResponse{Body: endpointObject(e)}, nil
}

func (h *v1Handlers) UpdateWebhook(ctx context.Context, req v1api.UpdateWebhookRequestObject) (v1api.UpdateWebhookResponseObject, error) {
	p, _ := principalFrom(ctx)
	b := req.Body
	if b.Url != nil {
		if err := h.checkURL(ctx, *b.Url); err != nil {
			return nil, err
		}
	}
	u := store.WebhookUpdate{URL: b.Url, Description: b.Description, Enabled: b.Enabled}
	if b.EventTypes != nil {
		u.EventTypes = eventTypes(b.EventTypes)
	}
	e, err := h.s.store.UpdateWebhookEndpoint(ctx, p.WorkspaceID, req.Id, u)
	if err != nil {
		return nil, apierr.WithParam(err, "id")
	}
	return v1api.UpdateWebhook200JSONResponse{Body: endpointObject(e)}, nil
}

func (h *v1Handlers) DeleteWebhook(ctx context.Context, req v1api.DeleteWebhookRequestObject) (v1api.DeleteWebhookResponseObject, error) {
	p, _ := principalFrom(ctx)
	err := h.s.store.DeleteWebhookEndpoint(ctx, p.WorkspaceID, req.Id)
	if err != nil {
		return nil, apierr.WithParam(err, "id")
	}
	return v1api.DeleteWebhook204Response{}, nil
}

func (h *v1Handlers) ListWebhookAttempts(ctx context.Context, req v1api.ListWebhookAttemptsRequestObject) (v1api.ListWebhookAttemptsResponseObject, error) {
	p, _ := principalFrom(ctx)
	e, err := h.endpoint(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	limit := 50
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	attempts, err := h.s.store.ListWebhookAttempts(ctx, p.WorkspaceID, e.ID, limit)
	if err != nil {
		return nil, err
	}
	body := v1api.WebhookAttemptList{Object: "list", Data: make([]v1api.WebhookAttempt, 0, len(attempts))}
	for _, a := range attempts {
		body.Data = append(body.Data, v1api.WebhookAttempt{Object: "webhook_attempt", EventId: a.EventID, EventType: a.EventType,
			Attempt: a.Attempt, Succeeded: a.Succeeded, ResponseCode: a.ResponseCode, DurationMs: int(a.Duration.Milliseconds()),
			Error: a.Error, CreatedAt: a.CreatedAt.Unix()})
	}
	return v1api.ListWebhookAttempts200JSONResponse{Body: body}, nil
}

func (h *v1Handlers) RedeliverWebhookEvent(ctx context.Context, req v1api.RedeliverWebhookEventRequestObject) (v1api.RedeliverWebhookEventResponseObject, error) {
	p, _ := principalFrom(ctx)
	e, err := h.endpoint(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	if !e.Enabled {
		return nil, apierr.Conflict("webhook_endpoint_disabled", "The endpoint is disabled; re-enable it with PATCH {\"enabled\": true} first.")
	}
	ev, err := h.s.store.EventByShortID(ctx, p.WorkspaceID, req.Body.EventId)
	if err != nil {
		return nil, apierr.WithParam(err, "event_id")
	}
	if _, err := h.s.jobs.Insert(ctx, events.DeliveryArgs{WorkspaceID: p.WorkspaceID, EndpointID: e.ID, EventSeq: ev.Seq}, nil); err != nil {
		return nil, err
	}
	return v1api.RedeliverWebhookEvent202JSONResponse{Body: v1api.RedeliverResult{Object: "webhook_redelivery", EndpointId: e.ShortID, EventId: ev.ShortID}}, nil
}
