package store

import (
	"context"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// PhoneNumber is a number the workspace bought.
type PhoneNumber = dbsqlc.PhoneNumber

// NewPhoneNumber is a purchased number to record.
type NewPhoneNumber = dbsqlc.InsertPhoneNumberParams

// InsertPhoneNumber records a purchased number.
func (q *queries) InsertPhoneNumber(ctx context.Context, p NewPhoneNumber) (PhoneNumber, error) {
	r, err := q.sql.InsertPhoneNumber(ctx, q.db, p)
	if isUniqueViolation(err) {
		return r, ErrExists
	}
	return r, err
}

// PhoneNumberByID is a number of the workspace.
func (q *queries) PhoneNumberByID(ctx context.Context, ws, id uuid.UUID) (PhoneNumber, error) {
	r, err := q.sql.PhoneNumberByID(ctx, q.db, dbsqlc.PhoneNumberByIDParams{WorkspaceID: ws, ID: id})
	return r, notFound("phone number", err)
}

// ListPhoneNumbers lists the workspace's numbers, newest first, by status if given.
func (q *queries) ListPhoneNumbers(ctx context.Context, ws uuid.UUID, status *string) ([]PhoneNumber, error) {
	return q.sql.ListPhoneNumbers(ctx, q.db, dbsqlc.ListPhoneNumbersParams{WorkspaceID: ws, Status: status})
}

// ReleasePhoneNumber marks an active number released.
func (q *queries) ReleasePhoneNumber(ctx context.Context, ws, id uuid.UUID) (PhoneNumber, error) {
	r, err := q.sql.ReleasePhoneNumber(ctx, q.db, dbsqlc.ReleasePhoneNumberParams{WorkspaceID: ws, ID: id})
	return r, notFound("phone number", err)
}
