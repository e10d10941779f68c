package server

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/gen/apiapi"
	"switchboard/store"
)

// Parked actions over REST: a purchase (and any other action) parked by Server.park, listed
// by GET /api/confirmations and confirmed by POST /api/confirmations/{id} with its code. They
// are the pending actions of agent.Pipeline, the same ones `YES <code>` confirms in a
// conversation and confirm_action on MCP.

// anyConfirmer confirms any pending action of the workspace, one of a conversation too
// (agent.Pipeline.Confirm); mcp.Confirmations only confirms those parked outside one.
type anyConfirmer interface {
	Confirm(ctx context.Context, c agent.Caller, actionID, code string) (any, error)
}

var errNoConfirmations = apierr.Invalid("", "confirmations_unavailable", "This server cannot park or confirm actions.")

// park parks a call of the named tool for the calling key and answers the parked action.
func (s *Server) park(ctx context.Context, tool string, args json.RawMessage) (apiapi.ParkedAction, error) {
	if s.actions == nil {
		return apiapi.ParkedAction{}, errNoConfirmations
	}
	told, result, err := s.actions.Park(ctx, caller(ctx), tool, args)
	if err != nil {
		return apiapi.ParkedAction{}, err
	}
	if result != nil {
		return apiapi.ParkedAction{}, fmt.Errorf("%s answered at once instead of parking", tool)
	}
	code, _ := told["code"].(string)
	expires, err := time.Parse(time.RFC3339, told["expires_at"].(string))
	if err != nil {
		return apiapi.ParkedAction{}, err
	}
	return apiapi.ParkedAction{Id: told["action_id"].(string), Object: apiapi.ParkedActionObjectPendingAction, Tool: tool,
		Status: apiapi.AwaitingConfirmation, Code: &code, Summary: told["summary"].(string), ExpiresAt: expires}, nil
}

func caller(ctx context.Context) agent.Caller {
	p, _ := principalFrom(ctx)
	return agent.Caller{WorkspaceID: p.WorkspaceID, Role: p.Access(), KeyID: p.KeyID}
}

func (h *apiHandlers) ListConfirmations(ctx context.Context, _ apiapi.ListConfirmationsRequestObject) (apiapi.ListConfirmationsResponseObject, error) {
	pending, err := h.s.store.PendingActionsOfWorkspace(ctx, workspaceOf(ctx))
	if err != nil {
		return nil, err
	}
	out := apiapi.ListConfirmations200JSONResponse{Object: "list", Data: make([]apiapi.ParkedAction, 0, len(pending))}
	for _, a := range pending {
		out.Data = append(out.Data, parkedView(a))
	}
	return out, nil
}

// parkedView is a pending action as listed: without its code, which only whoever parked it
// is shown.
func parkedView(a store.PendingAction) apiapi.ParkedAction {
	return apiapi.ParkedAction{Id: a.ShortID, Object: apiapi.ParkedActionObjectPendingAction, Tool: a.Tool,
		Status: apiapi.AwaitingConfirmation, Summary: a.Summary, ExpiresAt: a.ExpiresAt.UTC()}
}

func (h *apiHandlers) ConfirmPendingAction(ctx context.Context, req apiapi.ConfirmPendingActionRequestObject) (apiapi.ConfirmPendingActionResponseObject, error) {
	c, ok := h.s.actions.(anyConfirmer)
	if !ok {
		return nil, errNoConfirmations
	}
	out, err := c.Confirm(ctx, caller(ctx), req.Id, req.Body.Code)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	result := map[string]any{}
	if err := json.Unmarshal(raw, &result); err != nil {
		return nil, err
	}
	tool := ""
	if a, err := h.s.store.ActionByShortID(ctx, workspaceOf(ctx), req.Id); err == nil {
		tool = a.Tool
	}
	return apiapi.ConfirmPendingAction200JSONResponse{Id: req.Id, Object: apiapi.Confirmation, Tool: tool, Status: apiapi.Approved, Result: result}, nil
}
