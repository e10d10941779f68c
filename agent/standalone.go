package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/shortid"
	"switchboard/store"
)

// prepare is what a parked call of tool will wait for: its summary and arguments (Prepare,
// else Describe, else a generic summary), or a result to answer at once.
func prepare(ctx context.Context, tool Tool, call Call) (Prepared, error) {
	if tool.Prepare != nil {
		p, err := tool.Prepare(ctx, call)
		if err == nil && len(p.Arguments) == 0 {
			p.Arguments = call.Arguments
		}
		return p, err
	}
	summary := fmt.Sprintf("Run %s with %s", tool.Name, string(call.Arguments))
	if tool.Describe != nil {
		s, err := tool.Describe(ctx, call)
		if err != nil {
			return Prepared{}, err
		}
		summary = s
	}
	return Prepared{Summary: summary, Arguments: call.Arguments}, nil
}

// recheck asks a tool whether a confirmed action may still run; a failure to tell is logged
// and lets it run (the tool's own checks still apply).
func (p *Pipeline) recheck(ctx context.Context, tool Tool, a store.PendingAction, call Call) (string, string) {
	if tool.Recheck == nil {
		return "", ""
	}
	resolution, why, err := tool.Recheck(ctx, call)
	if err != nil {
		p.log.ErrorContext(ctx, "rechecking a confirmed action", slog.String("action", a.ShortID), slog.String("error", err.Error()))
		return "", ""
	}
	return resolution, why
}

// Caller is who parks or confirms an action outside a conversation (an MCP call): the
// workspace, the key's role and the key (uuid.Nil for the development user).
type Caller struct {
	WorkspaceID uuid.UUID
	Role        access.Role
	KeyID       uuid.UUID
}

// Park parks a call of a tool of the catalog outside any conversation, as an MCP call of a
// destructive bulk tool does: the action waits for ConfirmAction with its id and code (or
// expires), and confirmation.requested is emitted without a conversation_id. The result is
// what the caller is told: the action id, the code, the summary and when it expires; or the
// tool's own answer when there is nothing to confirm.
func (p *Pipeline) Park(ctx context.Context, c Caller, name string, args json.RawMessage) (map[string]any, any, error) {
	tool, ok := p.tools.Lookup(name)
	if !ok {
		return nil, nil, apierr.Invalid("", "unknown_tool", "There is no tool named %q.", name)
	}
	if err := access.Check(c.Role, tool.Permission, "The tool "+name); err != nil {
		return nil, nil, err
	}
	prepared, err := prepare(ctx, tool, Call{WorkspaceID: c.WorkspaceID, Arguments: args})
	if err != nil || prepared.Result != nil {
		return nil, prepared.Result, err
	}
	a := store.PendingAction{ID: uuid.New(), ShortID: shortid.New(shortid.Action), Code: newCode(),
		Tool: name, Arguments: prepared.Arguments, Summary: prepared.Summary, Role: c.Role.String(),
		ExpiresAt: p.now().Add(p.ConfirmationTTL), WorkspaceID: c.WorkspaceID}
	if c.KeyID != uuid.Nil {
		id := c.KeyID
		a.KeyID = &id
	}
	if len(a.Arguments) == 0 {
		a.Arguments = json.RawMessage("{}")
	}
	err = p.store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.ParkAction(ctx, c.WorkspaceID, a); err != nil {
			return err
		}
		_, err := tx.AppendEvents(ctx, c.WorkspaceID, []store.NewEvent{requestedEvent(a, "")})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	told := map[string]any{
		"success": true, "status": "awaiting_confirmation", "action_id": a.ShortID, "code": a.Code, "summary": a.Summary,
		"expires_at": a.ExpiresAt.UTC().Format(time.RFC3339),
		"instructions": "Nothing has been done yet. Show the summary to the user; if they agree, call confirm_action with action_id " +
			a.ShortID + " and code " + a.Code + " within " + humanDuration(p.ConfirmationTTL) + ".",
	}
	for k, v := range prepared.Details {
		told[k] = v
	}
	return told, nil, nil
}

// ConfirmAction confirms an action parked outside a conversation (Park) by its act_ id and
// code, and runs it: confirm_action on MCP. Confirm does it for any action.
func (p *Pipeline) ConfirmAction(ctx context.Context, c Caller, actionID, code string) (any, error) {
	return p.confirm(ctx, c, actionID, code, false)
}

// Confirm confirms any pending action of the workspace by its act_ id and code, one parked
// in a conversation too (POST /api/confirmations/{id}): the code is the same proof of the
// user's consent as their `YES <code>` reply.
func (p *Pipeline) Confirm(ctx context.Context, c Caller, actionID, code string) (any, error) {
	return p.confirm(ctx, c, actionID, code, true)
}

// confirm runs a confirmation. The confirming key needs the tool's permission, as in a turn.
// A wrong code rejects the action (a code cannot be guessed by trying), an expired one
// expires it, and a bulk action whose set grew by more than 10% is aborted (aborted_drift);
// each ends with confirmation.resolved. The result is the tool's. Without inConversation,
// an action of a conversation is not found: it is confirmed there, with `YES <code>`.
func (p *Pipeline) confirm(ctx context.Context, c Caller, actionID, code string, inConversation bool) (any, error) {
	var action store.PendingAction
	var tool Tool
	var refusal error
	conversation := ""
	err := p.store.InTx(ctx, func(tx *store.Tx) error {
		refusal = nil
		a, err := tx.ActionByShortIDForUpdate(ctx, c.WorkspaceID, actionID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && a.ConversationID != uuid.Nil && !inConversation) {
			refusal = apierr.NotFound("action_id", "action_not_found", "No action %q waits for confirm_action in this workspace; an action parked in a conversation is confirmed there with `YES <code>`.", actionID)
			return nil
		}
		if err != nil {
			return err
		}
		if a.ConversationID != uuid.Nil {
			conv, err := tx.ConversationByRef(ctx, c.WorkspaceID, a.ConversationID.String())
			if err != nil {
				return err
			}
			conversation = conv.ShortID
		}
		action = a
		resolution := ""
		switch t, ok := p.tools.Lookup(a.Tool); {
		case a.Status != "pending":
			refusal = apierr.Conflict("action_resolved", "The action %s was already %s; nothing was run again.", a.ShortID, a.Status)
			return nil
		case !p.now().Before(a.ExpiresAt):
			resolution = store.ActionExpired
			refusal = apierr.Conflict("action_expired", "The action %s has expired, so nothing was done. Call the tool again if you still want it.", a.ShortID)
		case a.Code != strings.TrimSpace(code):
			resolution = store.ActionRejected
			refusal = apierr.Invalid("code", "wrong_code", "That is not the code of action %s, so it was cancelled and nothing was done. Call the tool again to get a new code.", a.ShortID)
		case !ok:
			resolution = store.ActionRejected
			refusal = apierr.Conflict("action_unavailable", "The action %s can no longer run here, so nothing was done.", a.ShortID)
		default:
			tool = t
			// A refused key leaves it pending: a key that may confirm it still can.
			if err := access.Check(c.Role, t.Permission, "Confirming "+t.Name); err != nil {
				return leavePending{err}
			}
			resolution = store.ActionApproved
			if r, why := p.recheck(ctx, t, a, Call{WorkspaceID: c.WorkspaceID, Arguments: a.Arguments, ConversationID: a.ConversationID}); r != "" {
				resolution = r
				refusal = apierr.Conflict(r, "Nothing was done (%s): %s", strings.TrimSuffix(a.Summary, "."), why)
			}
		}
		if err := tx.ResolveAction(ctx, c.WorkspaceID, a.ID, resolution); err != nil {
			return err
		}
		if err := auditApproval(ctx, tx, c.WorkspaceID, a, resolution); err != nil {
			return err
		}
		_, err = tx.AppendEvents(ctx, c.WorkspaceID, []store.NewEvent{resolvedEvent(a, resolution, conversation)})
		return err
	})
	var pending leavePending
	if errors.As(err, &pending) {
		return nil, pending.err
	}
	if err != nil {
		return nil, err
	}
	if refusal != nil {
		return nil, refusal
	}
	result, runErr := tool.Run(ctx, Call{WorkspaceID: c.WorkspaceID, Arguments: action.Arguments, ConversationID: action.ConversationID})
	record := any(result)
	if runErr != nil {
		msg := "an internal error occurred"
		if e := apierr.As(runErr); e != nil && e.Kind != apierr.KindInternal {
			msg = e.Message
		}
		record = map[string]any{"error": msg}
	}
	body, _ := json.Marshal(record)
	if err := p.store.SetActionResult(context.WithoutCancel(ctx), c.WorkspaceID, action.ID, body); err != nil {
		p.log.ErrorContext(ctx, "recording an action's result", slog.String("action", action.ShortID), slog.String("error", err.Error()))
	}
	return result, runErr
}

// leavePending rolls back a confirmation that must leave the action as it is, with the
// refusal the caller gets.
type leavePending struct{ err error }

func (l leavePending) Error() string { return l.err.Error() }
