package store

import (
	"context"
	"crypto/subtle"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// APIKey is a stored key: its hash, never its secret.
type APIKey struct {
	ID            uuid.UUID
	WorkspaceID   uuid.UUID
	Role          string
	DisplayPrefix string
	CreatedAt     time.Time
	RevokedAt     *time.Time
}

// Principal is who a request acts as: a live key and its workspace, as of the lookup.
type Principal struct {
	KeyID          uuid.UUID
	Role           string
	WorkspaceID    uuid.UUID
	WorkspaceName  string
	WorkspaceState string
	BalanceNanoUSD int64
}

const keyColumns = `id, workspace_id, role, display_prefix, created_at, revoked_at`

func scanKey(row interface{ Scan(...any) error }) (APIKey, error) {
	var k APIKey
	err := row.Scan(&k.ID, &k.WorkspaceID, &k.Role, &k.DisplayPrefix, &k.CreatedAt, &k.RevokedAt)
	return k, notFound(err)
}

// CreateKey stores the hash of a new key of the workspace.
func (s *Store) CreateKey(ctx context.Context, workspaceID uuid.UUID, role string, sha256 []byte, displayPrefix string) (APIKey, error) {
	return scanKey(s.pool.QueryRow(ctx,
		`INSERT INTO api_keys (workspace_id, role, secret_sha256, display_prefix) VALUES ($1, $2, $3, $4)
		 RETURNING `+keyColumns, workspaceID, role, sha256, displayPrefix))
}

// ListKeys lists the workspace's keys, oldest first, revoked ones included.
func (s *Store) ListKeys(ctx context.Context, workspaceID uuid.UUID) ([]APIKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE workspace_id = $1 ORDER BY created_at, id`, workspaceID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (APIKey, error) { return scanKey(r) })
}

// RevokeKey revokes a key by id. It is an operator action (the `keys revoke` command), so it
// is not scoped to a workspace; revoking twice keeps the first revocation time.
func (s *Store) RevokeKey(ctx context.Context, id uuid.UUID) (APIKey, error) {
	return scanKey(s.pool.QueryRow(ctx,
		`UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING `+keyColumns, id))
}

// Authenticate finds the live key whose secret hashes to sha256. ErrNotFound for an unknown
// or revoked key. The lookup goes through the unique index on the hash; the final comparison
// is constant-time so that nothing about a stored hash leaks through timing.
func (s *Store) Authenticate(ctx context.Context, sha256 []byte) (Principal, error) {
	var p Principal
	var stored []byte
	err := s.pool.QueryRow(ctx,
		`SELECT k.id, k.role, k.secret_sha256, w.id, w.name, w.status, w.balance_nano_usd
		 FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
		 WHERE k.secret_sha256 = $1 AND k.revoked_at IS NULL`, sha256).
		Scan(&p.KeyID, &p.Role, &stored, &p.WorkspaceID, &p.WorkspaceName, &p.WorkspaceState, &p.BalanceNanoUSD)
	if err != nil {
		return Principal{}, notFound(err)
	}
	if subtle.ConstantTimeCompare(stored, sha256) != 1 {
		return Principal{}, ErrNotFound
	}
	return p, nil
}

// EnsureBootstrapKey makes sure a workspace named name exists and holds the key with the given
// hash, as owner. It is idempotent: run at every start with BOOTSTRAP_API_KEY set.
func (s *Store) EnsureBootstrapKey(ctx context.Context, name string, creditNanoUSD int64, sha256 []byte, displayPrefix string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var wsID uuid.UUID
		err := tx.QueryRow(ctx,
			`INSERT INTO workspaces (name, balance_nano_usd) VALUES ($1, $2)
			 ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING id`, name, creditNanoUSD).Scan(&wsID)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx,
			`INSERT INTO api_keys (workspace_id, role, secret_sha256, display_prefix) VALUES ($1, 'owner', $2, $3)
			 ON CONFLICT (secret_sha256) DO NOTHING`, wsID, sha256, displayPrefix)
		return err
	})
}
