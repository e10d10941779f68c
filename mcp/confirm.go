package mcp

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/manage"
)

// confirmTool is how an MCP client confirms an action a tool parked. An MCP call has no
// conversation to reply `YES <code>` in, so the client sends the action's id and code back;
// the confirming key needs the parked tool's role, as in a turn.
const confirmTool = "confirm_action"

// ConfirmInput is confirm_action's input.
type ConfirmInput struct {
	ActionID string `json:"action_id" jsonschema:"minLength=1,maxLength=64,description=The action_id a tool answered with status awaiting_confirmation (act_...)."`
	Code     string `json:"code" jsonschema:"minLength=4,maxLength=12,description=The code the same answer gave. A wrong code cancels the action."`
}

// confirmOperation describes confirm_action for the tool list; its handler is
// toolkit.confirmAction.
func (t toolkit) confirmOperation() manage.Operation {
	o := manage.NewOperation(confirmTool,
		"Confirm an action a tool parked (status awaiting_confirmation): run it once, if the user agreed to its summary. "+
			"A wrong code cancels the action; an expired one never runs; a bulk action whose matching set grew by more than 10% since it was parked is aborted (aborted_drift) and changes nothing. "+
			"The confirming key also needs the role of the parked tool.",
		agent.Risky, access.Read, func(context.Context, uuid.UUID, ConfirmInput) (any, error) { return nil, errNoConfirmations })
	return o
}

var errNoConfirmations = apierr.Invalid("", "confirmations_unavailable", "This server cannot park or confirm actions.")

func (t toolkit) confirmAction(ctx context.Context, caller Caller, args json.RawMessage) (any, error) {
	if t.confirm == nil {
		return nil, errNoConfirmations
	}
	var in ConfirmInput
	if err := strictJSON(args, &in); err != nil {
		return nil, err
	}
	if in.ActionID == "" {
		return nil, apierr.Invalid("action_id", "missing_action_id", "action_id is required.")
	}
	if in.Code == "" {
		return nil, apierr.Invalid("code", "missing_code", "code is required.")
	}
	return t.confirm.ConfirmAction(ctx, agent.Caller{WorkspaceID: caller.WorkspaceID, Role: caller.Role}, in.ActionID, in.Code)
}

// park parks a call of a tool that parks on MCP; when there is nothing to confirm (an empty
// set), the tool's answer comes back at once.
func (t toolkit) park(ctx context.Context, caller Caller, o manage.Operation, args json.RawMessage) (any, error) {
	if t.confirm == nil {
		return nil, errNoConfirmations
	}
	told, result, err := t.confirm.Park(ctx, agent.Caller{WorkspaceID: caller.WorkspaceID, Role: caller.Role}, o.Name, args)
	if err != nil {
		return nil, err
	}
	if result != nil {
		return result, nil
	}
	return told, nil
}

func strictJSON(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return apierr.Invalid("", "invalid_arguments", "The arguments do not fit the input schema of %s: %v", confirmTool, err)
	}
	return nil
}
