package server

import (
	"context"

	"switchboard/audit"
	"switchboard/erasure"
	"switchboard/gen/apiapi"
)

// The routes of issue 48 (trust under failure): the audit log, a contact's erasure and the
// workspace's retention period. Their services are stateless views over the store.

func (h *apiHandlers) ListAuditLog(ctx context.Context, req apiapi.ListAuditLogRequestObject) (apiapi.ListAuditLogResponseObject, error) {
	p := req.Params
	f := audit.Filter{Since: p.Since, Until: p.Until}
	for to, from := range map[*string]*string{&f.Action: p.Action, &f.Actor: p.Actor, &f.Target: p.Target} {
		if from != nil {
			*to = *from
		}
	}
	if p.Limit != nil {
		f.Limit = *p.Limit
	}
	if p.After != nil {
		f.After = p.After.String()
	}
	out, err := audit.New(h.s.store).List(ctx, workspaceOf(ctx), f)
	if err != nil {
		return nil, err
	}
	return apiapi.ListAuditLog200JSONResponse(out), nil
}

func (h *apiHandlers) EraseContact(ctx context.Context, req apiapi.EraseContactRequestObject) (apiapi.EraseContactResponseObject, error) {
	out, err := erasure.New(h.s.store).EraseContact(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.EraseContact200JSONResponse(out), nil
}

func (h *apiHandlers) GetRetention(ctx context.Context, _ apiapi.GetRetentionRequestObject) (apiapi.GetRetentionResponseObject, error) {
	out, err := erasure.New(h.s.store).Retention(ctx, workspaceOf(ctx))
	if err != nil {
		return nil, err
	}
	return apiapi.GetRetention200JSONResponse(out), nil
}

func (h *apiHandlers) SetRetention(ctx context.Context, req apiapi.SetRetentionRequestObject) (apiapi.SetRetentionResponseObject, error) {
	out, err := erasure.New(h.s.store).SetRetention(ctx, workspaceOf(ctx), req.Body.RetentionDays)
	if err != nil {
		return nil, err
	}
	return apiapi.SetRetention200JSONResponse(out), nil
}
