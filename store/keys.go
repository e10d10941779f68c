package store

import (
	"context"
	"crypto/subtle"
	"time"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/store/internal/dbsqlc"
)

// APIKey is a stored key: its hash, never its secret.
type APIKey struct {
	ID            uuid.UUID
	WorkspaceID   uuid.UUID
	Role          string
	DisplayPrefix string
	CreatedAt     time.Time
	RevokedAt     *time.Time
	Name          string     // may be empty (keys made before keys had names, or by the CLI)
	LastUsedAt    *time.Time // to the minute; nil when never used
}

// Principal is who a request acts as: a live key and its workspace, as of the lookup.
type Principal struct {
	KeyID          uuid.UUID // uuid.Nil for a dashboard session
	UserID         uuid.UUID // the signed-in user of a dashboard session; uuid.Nil for a key
	UserEmail      string
	Role           string
	WorkspaceID    uuid.UUID
	WorkspaceName  string
	WorkspaceState string
	BalanceNanoUSD int64
	// MonthlyCapNanoUSD is the workspace's monthly spend cap (nil: none) and
	// MonthSpendNanoUSD the spend of the current calendar month (UTC), as of the lookup.
	MonthlyCapNanoUSD *int64
	MonthSpendNanoUSD int64
}

func apiKey(k dbsqlc.APIKey) APIKey {
	return APIKey{ID: k.ID, WorkspaceID: k.WorkspaceID, Role: k.Role, DisplayPrefix: k.DisplayPrefix, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt,
		Name: k.Name, LastUsedAt: k.LastUsedAt}
}

// CreateKey stores the hash of a new key of the workspace.
func (q *queries) CreateKey(ctx context.Context, workspaceID uuid.UUID, role string, sha256 []byte, displayPrefix string) (APIKey, error) {
	k, err := q.sql.CreateKey(ctx, q.db, dbsqlc.CreateKeyParams{WorkspaceID: workspaceID, Role: role, SecretSHA256: sha256, DisplayPrefix: displayPrefix})
	return apiKey(k), err
}

// ListKeys lists the workspace's keys, oldest first, revoked ones included.
func (q *queries) ListKeys(ctx context.Context, workspaceID uuid.UUID) ([]APIKey, error) {
	rows, err := q.sql.ListKeys(ctx, q.db, workspaceID)
	return mapRows(rows, apiKey), err
}

// RevokeKey revokes a key by id. It is an operator action (the `keys revoke` command), so it
// is not scoped to a workspace; revoking twice keeps the first revocation time. The
// revocation is announced (RevocationChannel), so that every replica ends the key's open
// feeds and streams.
func (q *queries) RevokeKey(ctx context.Context, id uuid.UUID) (APIKey, error) {
	k, err := q.sql.RevokeKey(ctx, q.db, id)
	if err != nil {
		return APIKey{}, notFound("key", err)
	}
	return apiKey(k), q.announceRevocation(ctx, Revocation{KeyID: &k.ID})
}

// Authenticate finds the live key whose secret hashes to sha256. ErrNotFound for an unknown
// or revoked key. The lookup goes through the unique index on the hash; the final comparison
// is constant-time so that nothing about a stored hash leaks through timing.
func (q *queries) Authenticate(ctx context.Context, sha256 []byte) (Principal, error) {
	r, err := q.sql.Authenticate(ctx, q.db, sha256)
	if err != nil {
		return Principal{}, notFound("key", err)
	}
	if subtle.ConstantTimeCompare(r.SecretSHA256, sha256) != 1 {
		return Principal{}, &NotFoundError{What: "key"}
	}
	if err := q.sql.TouchKey(ctx, q.db, r.KeyID); err != nil {
		return Principal{}, err
	}
	return Principal{KeyID: r.KeyID, Role: r.Role, WorkspaceID: r.WorkspaceID, WorkspaceName: r.WorkspaceName,
		WorkspaceState: r.WorkspaceStatus, BalanceNanoUSD: r.BalanceNanoUSD,
		MonthlyCapNanoUSD: r.MonthlyCapNanoUSD, MonthSpendNanoUSD: monthSpend(r.SpendMonth, r.MonthSpendNanoUSD, time.Now())}, nil
}

// EnsureBootstrapKey makes sure a workspace named name exists and holds the key with the given
// hash, as owner. It is idempotent: run at every start with BOOTSTRAP_API_KEY set.
func (q *queries) EnsureBootstrapKey(ctx context.Context, name string, creditNanoUSD int64, sha256 []byte, displayPrefix string) error {
	return q.inTx(ctx, func(q *queries) error {
		wsID, err := q.sql.EnsureWorkspace(ctx, q.db, dbsqlc.EnsureWorkspaceParams{Name: name, BalanceNanoUSD: creditNanoUSD})
		if err != nil {
			return err
		}
		return q.sql.EnsureOwnerKey(ctx, q.db, dbsqlc.EnsureOwnerKeyParams{WorkspaceID: wsID, SecretSHA256: sha256, DisplayPrefix: displayPrefix})
	})
}

// mapRows converts generated rows to the store's types. An empty result is an empty slice,
// never nil, as pgx.CollectRows gave before: lists encode as [] rather than null.
func mapRows[R, T any](rows []R, f func(R) T) []T {
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

// Access is the principal's role in the permission table (access.None when unknown).
func (p Principal) Access() access.Role {
	r, _ := access.ParseRole(p.Role)
	return r
}

// KeyByID returns a key of the workspace, revoked or not.
func (q *queries) KeyByID(ctx context.Context, workspaceID, id uuid.UUID) (APIKey, error) {
	k, err := q.sql.KeyByID(ctx, q.db, dbsqlc.KeyByIDParams{WorkspaceID: workspaceID, ID: id})
	if err != nil {
		return APIKey{}, notFound("key", err)
	}
	return apiKey(k), nil
}
