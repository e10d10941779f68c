package server

import (
	"context"

	"switchboard/gen/apiapi"
	"switchboard/store"
)

// Blocked webchat visitors (/api/webchat/blocked-visitors). A visitor is their webchat
// conversation, so a block names its `mc-` id; webchat.Service.Chat refuses the visitor's
// token with 403 visitor_blocked (see blockVisitor in openapi/api.yaml).

func (h *apiHandlers) ListBlockedVisitors(ctx context.Context, _ apiapi.ListBlockedVisitorsRequestObject) (apiapi.ListBlockedVisitorsResponseObject, error) {
	list, err := h.s.webchat.Blocked(ctx, workspaceOf(ctx))
	if err != nil {
		return nil, err
	}
	out := apiapi.BlockedVisitorList{BlockedVisitors: make([]apiapi.BlockedVisitor, 0, len(list))}
	for _, v := range list {
		out.BlockedVisitors = append(out.BlockedVisitors, blockedVisitorBody(v))
	}
	return apiapi.ListBlockedVisitors200JSONResponse(out), nil
}

func (h *apiHandlers) BlockVisitor(ctx context.Context, req apiapi.BlockVisitorRequestObject) (apiapi.BlockVisitorResponseObject, error) {
	reason := ""
	if req.Body.Reason != nil {
		reason = *req.Body.Reason
	}
	v, created, err := h.s.webchat.Block(ctx, workspaceOf(ctx), req.Body.VisitorId, reason)
	if err != nil {
		return nil, err
	}
	if !created {
		return apiapi.BlockVisitor200JSONResponse(blockedVisitorBody(v)), nil
	}
	return apiapi.BlockVisitor201JSONResponse(blockedVisitorBody(v)), nil
}

func (h *apiHandlers) UnblockVisitor(ctx context.Context, req apiapi.UnblockVisitorRequestObject) (apiapi.UnblockVisitorResponseObject, error) {
	v, err := h.s.webchat.Unblock(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.UnblockVisitor200JSONResponse(blockedVisitorBody(v)), nil
}

func blockedVisitorBody(v store.BlockedVisitor) apiapi.BlockedVisitor {
	return apiapi.BlockedVisitor{VisitorId: v.VisitorID, Reason: v.Reason, CreatedAt: v.CreatedAt}
}
