package server

import (
	"context"
	"encoding/json"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/bulk"
	"switchboard/gen/apiapi"
	"switchboard/inputguard"
	"switchboard/manage"
)

// The bulk tools over REST: the same operations as on MCP (package bulk), parked the same
// way (agent.Pipeline.Park) and confirmed the same way (ConfirmAction).

func (h *apiHandlers) RunBulkTool(ctx context.Context, req apiapi.RunBulkToolRequestObject) (apiapi.RunBulkToolResponseObject, error) {
	o, ok := h.s.operation(req.Tool)
	if !ok {
		return nil, apierr.NotFound("tool", "unknown_tool", "There is no bulk tool named %q.", req.Tool)
	}
	args := rawBody(ctx)
	if err := inputguard.CheckJSON(args); err != nil {
		return nil, err
	}
	if !o.ParksOnMCP {
		out, err := o.Run(ctx, workspaceOf(ctx), args)
		if err != nil {
			return nil, err
		}
		r, err := bulk.ResultOf(out)
		return apiapi.RunBulkTool200JSONResponse(r), err
	}
	if h.s.actions == nil {
		return nil, apierr.Invalid("", "confirmations_unavailable", "This server cannot park or confirm actions.")
	}
	p, _ := principalFrom(ctx)
	told, result, err := h.s.actions.Park(ctx, agent.Caller{WorkspaceID: p.WorkspaceID, Role: p.Access(), KeyID: p.KeyID}, o.Name, args)
	if err != nil {
		return nil, err
	}
	if result != nil {
		r, err := bulk.ResultOf(result)
		return apiapi.RunBulkTool200JSONResponse(r), err
	}
	pending, err := bulk.PendingOf(told)
	return apiapi.RunBulkTool202JSONResponse(pending), err
}

func (h *apiHandlers) GetBulkRun(ctx context.Context, req apiapi.GetBulkRunRequestObject) (apiapi.GetBulkRunResponseObject, error) {
	o, ok := h.s.operation("get_bulk_run")
	if !ok {
		return nil, apierr.NotFound("run_id", "bulk_run_not_found", "No bulk run %q.", req.RunId)
	}
	args, _ := json.Marshal(bulk.GetRunInput{RunID: req.RunId})
	out, err := o.Run(ctx, workspaceOf(ctx), args)
	if err != nil {
		return nil, err
	}
	r, err := bulk.ResultOf(out)
	return apiapi.GetBulkRun200JSONResponse(r), err
}

func (h *apiHandlers) ConfirmAction(ctx context.Context, req apiapi.ConfirmActionRequestObject) (apiapi.ConfirmActionResponseObject, error) {
	if h.s.actions == nil {
		return nil, apierr.Invalid("", "confirmations_unavailable", "This server cannot park or confirm actions.")
	}
	p, _ := principalFrom(ctx)
	out, err := h.s.actions.ConfirmAction(ctx, agent.Caller{WorkspaceID: p.WorkspaceID, Role: p.Access(), KeyID: p.KeyID}, req.ActionId, req.Body.Code)
	if err != nil {
		return nil, err
	}
	r, err := bulk.ResultOf(out)
	return apiapi.ConfirmAction200JSONResponse(r), err
}

// operation is the management operation named name.
func (s *Server) operation(name string) (manage.Operation, bool) {
	if s.ops == nil {
		return manage.Operation{}, false
	}
	for _, o := range s.ops.Operations() {
		if o.Name == name {
			return o, true
		}
	}
	return manage.Operation{}, false
}
