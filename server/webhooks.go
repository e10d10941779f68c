package server

import (
	"context"

	"switchboard/events"
	"switchboard/gen/v1api"
	"switchboard/store"
)

// The webhook endpoints' rules live in events.Endpoints, shared with the dashboard; these
// handlers only translate.

func endpointObject(e store.WebhookEndpoint) v1api.WebhookEndpoint {
	types := make([]v1api.WebhookEventType, len(e.EventTypes))
	for i, t := range e.EventTypes {
		types[i] = v1api.WebhookEventType(t)
	}
	return v1api.WebhookEndpoint{Id: e.ShortID, Object: "webhook_endpoint", Url: e.URL, EventTypes: types,
		Description: e.Description, Enabled: e.Enabled, CreatedAt: e.CreatedAt.Unix(), UpdatedAt: e.UpdatedAt.Unix()}
}

// eventTypeNames is a subscription as the domain takes it; nil stays nil (not given).
func eventTypeNames(in *[]v1api.WebhookEventType) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(*in))
	for i, t := range *in {
		out[i] = string(t)
	}
	return out
}

func (h *v1Handlers) CreateWebhook(ctx context.Context, req v1api.CreateWebhookRequestObject) (v1api.CreateWebhookResponseObject, error) {
	p, _ := principalFrom(ctx)
	e, err := h.s.webhooks.Create(ctx, p, events.NewEndpoint{URL: req.Body.Url, EventTypes: eventTypeNames(req.Body.EventTypes),
		Description: req.Body.Description})
	if err != nil {
		return nil, err
	}
	o := endpointObject(e)
	return v1api.CreateWebhook201JSONResponse{Body: v1api.WebhookEndpointWithSecret{Id: o.Id, Object: "webhook_endpoint", Url: o.Url, EventTypes: o.EventTypes,
		Description: o.Description, Enabled: o.Enabled, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, Secret: e.Secret}}, nil
}

func (h *v1Handlers) ListWebhooks(ctx context.Context, req v1api.ListWebhooksRequestObject) (v1api.ListWebhooksResponseObject, error) {
	p, _ := principalFrom(ctx)
	limit := 100
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	list, err := h.s.webhooks.List(ctx, p, limit)
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
	p, _ := principalFrom(ctx)
	e, err := h.s.webhooks.Get(ctx, p, req.Id)
	if err != nil {
		return nil, err
	}
	return v1api.GetWebhook200JSONResponse{Body: endpointObject(e)}, nil
}

func (h *v1Handlers) UpdateWebhook(ctx context.Context, req v1api.UpdateWebhookRequestObject) (v1api.UpdateWebhookResponseObject, error) {
	p, _ := principalFrom(ctx)
	b := req.Body
	e, err := h.s.webhooks.Update(ctx, p, req.Id, events.EndpointChange{URL: b.Url, EventTypes: eventTypeNames(b.EventTypes),
		Description: b.Description, Enabled: b.Enabled})
	if err != nil {
		return nil, err
	}
	return v1api.UpdateWebhook200JSONResponse{Body: endpointObject(e)}, nil
}

func (h *v1Handlers) DeleteWebhook(ctx context.Context, req v1api.DeleteWebhookRequestObject) (v1api.DeleteWebhookResponseObject, error) {
	p, _ := principalFrom(ctx)
	if err := h.s.webhooks.Delete(ctx, p, req.Id); err != nil {
		return nil, err
	}
	return v1api.DeleteWebhook204Response{}, nil
}

func (h *v1Handlers) ListWebhookAttempts(ctx context.Context, req v1api.ListWebhookAttemptsRequestObject) (v1api.ListWebhookAttemptsResponseObject, error) {
	p, _ := principalFrom(ctx)
	limit := 50
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	attempts, err := h.s.webhooks.Attempts(ctx, p, req.Id, limit)
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
	e, ev, err := h.s.webhooks.Redeliver(ctx, p, req.Id, req.Body.EventId)
	if err != nil {
		return nil, err
	}
	return v1api.RedeliverWebhookEvent202JSONResponse{Body: v1api.RedeliverResult{Object: "webhook_redelivery", EndpointId: e.ShortID, EventId: ev.ShortID}}, nil
}
