package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// PendingAction is a risky or spend tool call parked until the user confirms it.
type PendingAction struct {
	ID             uuid.UUID
	ShortID        string    // act_...
	ConversationID uuid.UUID // uuid.Nil: parked by an MCP call, outside any conversation
	Code           string    // what the user replies after YES
	Tool           string
	Arguments      json.RawMessage
	Summary        string
	KeyID          *uuid.UUID // the key that asked; nil for the development user
	Role           string     // its role when it asked
	Status         string     // pending, approved, rejected, expired
	ExpiresAt      time.Time
	WorkspaceID    uuid.UUID
}

// The resolutions of a pending action (its status once resolved).
const (
	ActionApproved = "approved"
	ActionRejected = "rejected"
	ActionExpired  = "expired"
	// ActionAbortedDrift: confirmed, but the bulk action's matching set had grown by more
	// than 10% since it was parked, so nothing ran (package bulk).
	ActionAbortedDrift = "aborted_drift"
)

func pendingAction(r dbsqlc.PendingAction) PendingAction {
	var conv uuid.UUID
	if r.ConversationID != nil {
		conv = *r.ConversationID
	}
	return PendingAction{ID: r.ID, ShortID: r.ShortID, ConversationID: conv, Code: r.Code, Tool: r.Tool,
		Arguments: r.Arguments, Summary: r.Summary, KeyID: r.KeyID, Role: r.Role, Status: r.Status,
		ExpiresAt: r.ExpiresAt, WorkspaceID: r.WorkspaceID}
}

// ParkAction stores a pending action of the workspace (a.ConversationID set by the caller).
func (q *queries) ParkAction(ctx context.Context, workspaceID uuid.UUID, a PendingAction) error {
	var conv *uuid.UUID
	if a.ConversationID != uuid.Nil {
		conv = &a.ConversationID
	}
	return q.sql.ParkAction(ctx, q.db, dbsqlc.ParkActionParams{ID: a.ID, WorkspaceID: workspaceID, ShortID: a.ShortID,
		ConversationID: conv, Code: a.Code, Tool: a.Tool, Arguments: a.Arguments, Summary: a.Summary,
		KeyID: a.KeyID, Role: a.Role, ExpiresAt: a.ExpiresAt})
}

// PendingActionsForUpdate returns the conversation's pending actions, locked until the
// transaction ends (call it on a Tx).
func (q *queries) PendingActionsForUpdate(ctx context.Context, workspaceID, conversationID uuid.UUID) ([]PendingAction, error) {
	rows, err := q.sql.PendingActionsForUpdate(ctx, q.db, dbsqlc.PendingActionsForUpdateParams{WorkspaceID: workspaceID, ConversationID: &conversationID})
	return mapRows(rows, pendingAction), err
}

// ResolveAction sets a pending action's resolution.
func (q *queries) ResolveAction(ctx context.Context, workspaceID, id uuid.UUID, resolution string) error {
	return q.sql.ResolveAction(ctx, q.db, dbsqlc.ResolveActionParams{WorkspaceID: workspaceID, ID: id, Status: resolution})
}

// SetActionResult records what an approved action returned (or why it failed).
func (q *queries) SetActionResult(ctx context.Context, workspaceID, id uuid.UUID, result json.RawMessage) error {
	return q.sql.SetActionResult(ctx, q.db, dbsqlc.SetActionResultParams{WorkspaceID: workspaceID, ID: id, Result: result})
}

// LatestActionWithCode returns the conversation's newest action with code, whatever its
// status; ErrNotFound when there is none.
func (q *queries) LatestActionWithCode(ctx context.Context, workspaceID, conversationID uuid.UUID, code string) (PendingAction, error) {
	r, err := q.sql.LatestActionWithCode(ctx, q.db, dbsqlc.LatestActionWithCodeParams{WorkspaceID: workspaceID, ConversationID: &conversationID, Code: code})
	return pendingAction(r), notFound("action", err)
}

// ActionByShortID returns an action of the workspace by its act_ id.
func (q *queries) ActionByShortID(ctx context.Context, workspaceID uuid.UUID, shortID string) (PendingAction, error) {
	r, err := q.sql.ActionByShortID(ctx, q.db, dbsqlc.ActionByShortIDParams{WorkspaceID: workspaceID, ShortID: shortID})
	return pendingAction(r), notFound("action", err)
}

// ExpireActions marks up to limit pending actions past their expiry as expired and returns
// them (call it on a Tx that also appends their events).
func (q *queries) ExpireActions(ctx context.Context, limit int) ([]PendingAction, error) {
	rows, err := q.sql.ExpireActions(ctx, q.db, int32(limit))
	return mapRows(rows, pendingAction), err
}

// ActionByShortIDForUpdate returns an action of the workspace by its act_ id, locked until
// the transaction ends (call it on a Tx): two confirmations of one action run one after the
// other, and the second finds it resolved.
func (q *queries) ActionByShortIDForUpdate(ctx context.Context, workspaceID uuid.UUID, shortID string) (PendingAction, error) {
	r, err := q.sql.ActionByShortIDForUpdate(ctx, q.db, dbsqlc.ActionByShortIDForUpdateParams{WorkspaceID: workspaceID, ShortID: shortID})
	return pendingAction(r), notFound("action", err)
}

// PendingActionsOfWorkspace returns the workspace's actions still waiting for confirmation,
// oldest first (at most 100).
func (q *queries) PendingActionsOfWorkspace(ctx context.Context, workspaceID uuid.UUID) ([]PendingAction, error) {
	rows, err := q.sql.PendingActionsOfWorkspace(ctx, q.db, workspaceID)
	if err != nil {
		return nil, err
	}
	out := make([]PendingAction, len(rows))
	for i, r := range rows {
		out[i] = pendingAction(r)
	}
	return out, nil
}
