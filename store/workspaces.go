package store

import (
	"context"
	"time"

	"github.com/google/uuid"
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

const workspaceColumns = `id, name, status, balance_nano_usd, created_at`

func scanWorkspace(row interface{ Scan(...any) error }) (Workspace, error) {
	var w Workspace
	err := row.Scan(&w.ID, &w.Name, &w.Status, &w.BalanceNanoUSD, &w.CreatedAt)
	return w, notFound(err)
}

// CreateWorkspace creates a workspace with a starting credit. ErrExists if the name is taken.
func (s *Store) CreateWorkspace(ctx context.Context, name string, creditNanoUSD int64) (Workspace, error) {
	w, err := scanWorkspace(s.pool.QueryRow(ctx,
		`INSERT INTO workspaces (name, balance_nano_usd) VALUES ($1, $2) RETURNING `+workspaceColumns,
		name, creditNanoUSD))
	if isUniqueViolation(err) {
		return Workspace{}, ErrExists
	}
	return w, err
}

// WorkspaceByName finds a workspace by its unique name.
func (s *Store) WorkspaceByName(ctx context.Context, name string) (Workspace, error) {
	return scanWorkspace(s.pool.QueryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE name = $1`, name))
}

// AddCredit adds (or, when negative, removes) credit and returns the workspace.
func (s *Store) AddCredit(ctx context.Context, name string, nanoUSD int64) (Workspace, error) {
	return scanWorkspace(s.pool.QueryRow(ctx,
		`UPDATE workspaces SET balance_nano_usd = balance_nano_usd + $2, updated_at = now()
		 WHERE name = $1 RETURNING `+workspaceColumns, name, nanoUSD))
}

// SetWorkspaceStatus suspends or resumes a workspace.
func (s *Store) SetWorkspaceStatus(ctx context.Context, name, status string) (Workspace, error) {
	return scanWorkspace(s.pool.QueryRow(ctx,
		`UPDATE workspaces SET status = $2, updated_at = now() WHERE name = $1 RETURNING `+workspaceColumns,
		name, status))
}
