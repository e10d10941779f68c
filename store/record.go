package store

import (
	"context"

	"github.com/google/uuid"
)

// TurnRecord is what a surface keeps of a turn beside the conversation: its response
// object, and what that completes. The turn pipeline writes it with WriteTurnRecord in the
// transaction that commits the turn, so the record, the messages and the charge commit
// together or not at all; the surface only describes the record, it never touches the
// transaction.
type TurnRecord struct {
	// Response is inserted; with Finish, it completes the unfinished (background) response
	// of that short id instead, and the turn rolls back if another run finished it first.
	Response StoredResponse
	Finish   bool
	// IdempotencyKey, when set, is completed with the response's short id.
	IdempotencyKey string
	// Events are appended after the turn's own events.
	Events []NewEvent
}

// WriteTurnRecord stores the record in the transaction.
func (t *Tx) WriteTurnRecord(ctx context.Context, workspaceID uuid.UUID, r TurnRecord) error {
	var err error
	if r.Finish {
		err = t.FinishResponse(ctx, workspaceID, r.Response)
	} else {
		err = t.InsertResponse(ctx, workspaceID, r.Response)
	}
	if err != nil || r.IdempotencyKey == "" {
		return err
	}
	return t.CompleteIdempotencyKey(ctx, workspaceID, r.IdempotencyKey, r.Response.ShortID)
}
