package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/store/internal/dbsqlc"
)

// PhoneNumberRenewal is one charged month of a number.
type PhoneNumberRenewal = dbsqlc.PhoneNumberRenewal

// DuePhoneNumber names an active number whose paid period has ended.
type DuePhoneNumber = dbsqlc.DuePhoneNumbersRow

// DuePhoneNumbers lists up to limit active numbers, of every workspace, whose paid period
// ended by now, the longest due first, after the given one (the zero value: from the start):
// the renewal job's pages.
func (q *queries) DuePhoneNumbers(ctx context.Context, now time.Time, after DuePhoneNumber, limit int) ([]DuePhoneNumber, error) {
	return q.sql.DuePhoneNumbers(ctx, q.db, dbsqlc.DuePhoneNumbersParams{Now: now, AfterPaidThrough: after.PaidThrough, AfterID: after.ID, MaxRows: int32(limit)})
}

// LockPhoneNumber reads a number and locks it until the transaction ends.
func (q *queries) LockPhoneNumber(ctx context.Context, ws, id uuid.UUID) (PhoneNumber, error) {
	r, err := q.sql.LockPhoneNumber(ctx, q.db, dbsqlc.LockPhoneNumberParams{WorkspaceID: ws, ID: id})
	return r, notFound("phone number", err)
}

// RenewPhoneNumber records the charge of the period [start, end) of a number and moves its
// paid_through to end; ok is false when that period was already charged (nothing changes).
func (q *queries) RenewPhoneNumber(ctx context.Context, ws, id uuid.UUID, start, end time.Time, credits int) (ok bool, err error) {
	_, err = q.sql.InsertPhoneNumberRenewal(ctx, q.db, dbsqlc.InsertPhoneNumberRenewalParams{WorkspaceID: ws, PhoneNumberID: id,
		PeriodStart: start, PeriodEnd: end, Credits: credits})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, err = q.sql.AdvancePhoneNumberPaidThrough(ctx, q.db, dbsqlc.AdvancePhoneNumberPaidThroughParams{WorkspaceID: ws, ID: id, PaidThrough: end})
	return err == nil, notFound("phone number", err)
}

// MarkPhoneNumberRenewalFailed notes, once, that a number's renewal could not be paid.
func (q *queries) MarkPhoneNumberRenewalFailed(ctx context.Context, ws, id uuid.UUID) error {
	return q.sql.MarkPhoneNumberRenewalFailed(ctx, q.db, dbsqlc.MarkPhoneNumberRenewalFailedParams{WorkspaceID: ws, ID: id})
}

// LapsePhoneNumber marks an active number released for an unpaid renewal.
func (q *queries) LapsePhoneNumber(ctx context.Context, ws, id uuid.UUID) (PhoneNumber, error) {
	r, err := q.sql.LapsePhoneNumber(ctx, q.db, dbsqlc.LapsePhoneNumberParams{WorkspaceID: ws, ID: id})
	return r, notFound("phone number", err)
}

// PhoneNumberRenewals lists the charged months of a number, oldest first.
func (q *queries) PhoneNumberRenewals(ctx context.Context, ws, id uuid.UUID) ([]PhoneNumberRenewal, error) {
	return q.sql.PhoneNumberRenewals(ctx, q.db, dbsqlc.PhoneNumberRenewalsParams{WorkspaceID: ws, PhoneNumberID: id})
}
