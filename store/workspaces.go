package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"switchboard/gen/dbsqlc"
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
}

func workspace(w dbsqlc.Workspace, err error) (Workspace, error) {
	if err != nil {
		return Workspace{}, notFound("workspace", err)
	}
	return Workspace{ID: w.ID, Name: w.Name, Status: w.Status, BalanceNanoUSD: w.BalanceNanoUSD, CreatedAt: w.CreatedAt}, nil
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

// AddCredit adds (or, when negative, removes) credit and returns the workspace.
func (q *queries) AddCredit(ctx context.Context, name string, nanoUSD int64) (Workspace, error) {
	return workspace(q.sql.AddCredit(ctx, q.db, dbsqlc.AddCreditParams{Name: name, NanoUSD: nanoUSD}))
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
