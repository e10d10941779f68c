package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"switchboard/store/internal/dbsqlc"
)

// Workspace statuses.
const (
	WorkspaceActive    = "active"
	WorkspaceSuspended = "suspended"
)

// Workspace is a tenant: it owns keys, agents, conversations, events and a credit balance.
type Workspace struct {
	ID             uuid.UUID
	Name           string
	Status         string
	BalanceNanoUSD int64
	CreatedAt      time.Time
	// MonthlyCapNanoUSD is the monthly spend cap; nil when there is none.
	MonthlyCapNanoUSD *int64
	// MonthSpendNanoUSD is the spend of the current calendar month (UTC), as of the read.
	MonthSpendNanoUSD int64
}

func workspace(w dbsqlc.Workspace, err error) (Workspace, error) {
	if err != nil {
		return Workspace{}, notFound("workspace", err)
	}
	return Workspace{ID: w.ID, Name: w.Name, Status: w.Status, BalanceNanoUSD: w.BalanceNanoUSD, CreatedAt: w.CreatedAt,
		MonthlyCapNanoUSD: w.MonthlyCapNanoUSD, MonthSpendNanoUSD: monthSpend(w.SpendMonth, w.MonthSpendNanoUSD, time.Now())}, nil
}

// CreateWorkspace creates a workspace with a starting credit. ErrExists if the name is taken.
func (q *queries) CreateWorkspace(ctx context.Context, name string, creditNanoUSD int64) (Workspace, error) {
	w, err := workspace(q.sql.CreateWorkspace(ctx, q.db, dbsqlc.CreateWorkspaceParams{Name: name, BalanceNanoUSD: creditNanoUSD}))
	if isUniqueViolation(err) {
		return Workspace{}, ErrExists
	}
	return w, err
}

// WorkspaceByName finds a workspace by its unique name.
func (q *queries) WorkspaceByName(ctx context.Context, name string) (Workspace, error) {
	return workspace(q.sql.WorkspaceByName(ctx, q.db, name))
}

// AddCredit adds (or, when negative, removes) credit and returns the workspace. Credit
// removed down to nothing is announced (RevocationChannel), so cached keys stop at once.
func (q *queries) AddCredit(ctx context.Context, name string, nanoUSD int64) (Workspace, error) {
	w, err := workspace(q.sql.AddCredit(ctx, q.db, dbsqlc.AddCreditParams{Name: name, NanoUSD: nanoUSD}))
	if err == nil && w.BalanceNanoUSD <= 0 {
		err = q.announceRevocation(ctx, Revocation{WorkspaceID: &w.ID})
	}
	return w, err
}

// SetWorkspaceStatus suspends or resumes a workspace. The change is announced
// (RevocationChannel): a suspension ends the workspace's open feeds and streams on every
// replica.
func (q *queries) SetWorkspaceStatus(ctx context.Context, name, status string) (Workspace, error) {
	w, err := workspace(q.sql.SetWorkspaceStatus(ctx, q.db, dbsqlc.SetWorkspaceStatusParams{Name: name, Status: status}))
	if err != nil {
		return w, err
	}
	return w, q.announceRevocation(ctx, Revocation{WorkspaceID: &w.ID, WorkspaceStatus: w.Status})
}

// monthSpend is the spend counted for month (its first day) if that is the month of now (UTC),
// else zero: no charge has been made yet this month.
func monthSpend(month pgtype.Date, spend int64, now time.Time) int64 {
	y, m, _ := now.UTC().Date()
	if !month.Valid || month.Time.Year() != y || month.Time.Month() != m {
		return 0
	}
	return spend
}

// CapReached reports whether a monthly cap is set and the month's spend has reached it.
func CapReached(capNanoUSD *int64, monthSpendNanoUSD int64) bool {
	return capNanoUSD != nil && monthSpendNanoUSD >= *capNanoUSD
}

// NextMonth is the first instant of the calendar month (UTC) after now's: when a monthly cap
// starts counting again.
func NextMonth(now time.Time) time.Time {
	y, m, _ := now.UTC().Date()
	return time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
}

// SetMonthlyCap sets the monthly spend cap of the workspace named name; a nil cap clears it.
// The cap must be positive.
// A cap set at or below this month's spend is announced (RevocationChannel), so cached keys
// stop at once.
func (q *queries) SetMonthlyCap(ctx context.Context, name string, capNanoUSD *int64) (Workspace, error) {
	return q.capReachedNow(ctx)(workspace(q.sql.SetMonthlyCap(ctx, q.db, dbsqlc.SetMonthlyCapParams{Name: name, CapNanoUSD: capNanoUSD})))
}

// SetMonthlyCapByID is SetMonthlyCap for a workspace by id (the dashboard's Settings page).
func (q *queries) SetMonthlyCapByID(ctx context.Context, id uuid.UUID, capNanoUSD *int64) (Workspace, error) {
	return q.capReachedNow(ctx)(workspace(q.sql.SetMonthlyCapByID(ctx, q.db, dbsqlc.SetMonthlyCapByIDParams{ID: id, CapNanoUSD: capNanoUSD})))
}

// capReachedNow announces a workspace whose new cap is already reached.
func (q *queries) capReachedNow(ctx context.Context) func(Workspace, error) (Workspace, error) {
	return func(w Workspace, err error) (Workspace, error) {
		if err == nil && CapReached(w.MonthlyCapNanoUSD, w.MonthSpendNanoUSD) {
			err = q.announceRevocation(ctx, Revocation{WorkspaceID: &w.ID})
		}
		return w, err
	}
}

// WorkspaceByID finds a workspace by id.
func (q *queries) WorkspaceByID(ctx context.Context, id uuid.UUID) (Workspace, error) {
	return workspace(q.sql.WorkspaceByID(ctx, q.db, id))
}
