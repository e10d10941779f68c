package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// User is a person of a workspace who signs in to the dashboard.
type User struct {
	ID            uuid.UUID
	WorkspaceID   uuid.UUID
	WorkspaceName string
	Email         string
	Role          string
	PasswordHash  string // argon2id PHC string; empty until a password is set
	SessionEpoch  int
	CreatedAt     time.Time
}

func user(u dbsqlc.User, workspaceName string) User {
	h := ""
	if u.PasswordHash != nil {
		h = *u.PasswordHash
	}
	return User{ID: u.ID, WorkspaceID: u.WorkspaceID, WorkspaceName: workspaceName, Email: u.Email, Role: u.Role,
		PasswordHash: h, SessionEpoch: u.SessionEpoch, CreatedAt: u.CreatedAt}
}

func userRow(r dbsqlc.UserByEmailRow) User {
	return user(dbsqlc.User{ID: r.ID, WorkspaceID: r.WorkspaceID, Email: r.Email, Role: r.Role, PasswordHash: r.PasswordHash,
		SessionEpoch: r.SessionEpoch, CreatedAt: r.CreatedAt}, r.WorkspaceName)
}

// CreateUser creates a user without a password, holding the hash of a one-time
// set-password token valid until expires. ErrExists when the email is taken.
func (q *queries) CreateUser(ctx context.Context, workspaceID uuid.UUID, email, role string, tokenSHA256 []byte, expires time.Time) (User, error) {
	u, err := q.sql.CreateUser(ctx, q.db, dbsqlc.CreateUserParams{WorkspaceID: workspaceID, Email: email, Role: role,
		SetPasswordSHA256: tokenSHA256, SetPasswordExpiresAt: &expires})
	if isUniqueViolation(err) {
		return User{}, ErrExists
	}
	return user(u, ""), err
}

// UserByEmail finds a user by email (emails are unique across workspaces).
func (q *queries) UserByEmail(ctx context.Context, email string) (User, error) {
	r, err := q.sql.UserByEmail(ctx, q.db, email)
	if err != nil {
		return User{}, notFound("user", err)
	}
	return userRow(r), nil
}

// UserBySetPasswordToken finds the user whose unexpired set-password token hashes to sum.
func (q *queries) UserBySetPasswordToken(ctx context.Context, sum []byte) (User, error) {
	r, err := q.sql.UserBySetPasswordToken(ctx, q.db, sum)
	if err != nil {
		return User{}, notFound("user", err)
	}
	return userRow(dbsqlc.UserByEmailRow(r)), nil
}

// SetPassword stores a password hash, uses up the set-password token and ends the user's
// other sessions (the session epoch moves on).
func (q *queries) SetPassword(ctx context.Context, workspaceID, id uuid.UUID, hash string) (User, error) {
	u, err := q.sql.SetPassword(ctx, q.db, dbsqlc.SetPasswordParams{WorkspaceID: workspaceID, ID: id, PasswordHash: &hash})
	if err != nil {
		return User{}, notFound("user", err)
	}
	return user(u, ""), nil
}

// EndSessions signs the user out of every session, on every replica: sessions remember the
// epoch they were made in, and the epoch moves on.
func (q *queries) EndSessions(ctx context.Context, workspaceID, id uuid.UUID) error {
	return q.sql.BumpSessionEpoch(ctx, q.db, dbsqlc.BumpSessionEpochParams{WorkspaceID: workspaceID, ID: id})
}

// ListUsers lists the workspace's users by email.
func (q *queries) ListUsers(ctx context.Context, workspaceID uuid.UUID) ([]User, error) {
	rows, err := q.sql.ListUsers(ctx, q.db, workspaceID)
	return mapRows(rows, func(u dbsqlc.User) User { return user(u, "") }), err
}

// SessionPrincipal is who a dashboard session of user id acts as, and the user's current
// session epoch. ErrNotFound when the user no longer exists.
func (q *queries) SessionPrincipal(ctx context.Context, id uuid.UUID) (Principal, int, error) {
	r, err := q.sql.SessionPrincipal(ctx, q.db, id)
	if err != nil {
		return Principal{}, 0, notFound("user", err)
	}
	return Principal{UserID: r.UserID, UserEmail: r.Email, Role: r.Role, WorkspaceID: r.WorkspaceID, WorkspaceName: r.WorkspaceName,
		WorkspaceState: r.WorkspaceStatus, BalanceNanoUSD: r.BalanceNanoUSD,
		MonthlyCapNanoUSD: r.MonthlyCapNanoUSD, MonthSpendNanoUSD: monthSpend(r.SpendMonth, r.MonthSpendNanoUSD, time.Now())}, r.SessionEpoch, nil
}

// EnsureDevelopmentUser makes sure the workspace has the passwordless development user
// (an owner) of the given email, and returns it.
func (q *queries) EnsureDevelopmentUser(ctx context.Context, workspaceID uuid.UUID, email string) (User, error) {
	u, err := q.sql.EnsureDevelopmentUser(ctx, q.db, dbsqlc.EnsureDevelopmentUserParams{WorkspaceID: workspaceID, Email: email})
	return user(u, ""), err
}

// CreateNamedKey stores the hash of a new key with a name, made by a user (nil for none).
func (q *queries) CreateNamedKey(ctx context.Context, workspaceID uuid.UUID, role, name string, createdBy *uuid.UUID, sha256 []byte, displayPrefix string) (APIKey, error) {
	k, err := q.sql.CreateNamedKey(ctx, q.db, dbsqlc.CreateNamedKeyParams{WorkspaceID: workspaceID, Role: role, SecretSHA256: sha256,
		DisplayPrefix: displayPrefix, Name: name, CreatedBy: createdBy})
	return apiKey(k), err
}

// DeleteExpiredSessions removes the dashboard sessions past their expiry.
func (q *queries) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	return q.sql.DeleteExpiredSessions(ctx, q.db)
}

// UserForUpdate reads a user of the workspace and locks it until the transaction ends.
// A NotFoundError when the workspace has no such user.
func (q *queries) UserForUpdate(ctx context.Context, workspaceID, id uuid.UUID) (User, error) {
	u, err := q.sql.UserForUpdate(ctx, q.db, dbsqlc.UserForUpdateParams{WorkspaceID: workspaceID, ID: id})
	if err != nil {
		return User{}, notFound("user", err)
	}
	return user(u, ""), nil
}

// SetUserRole changes a user's role. Sessions re-read the role on every request, so the
// change holds at once without signing the user out.
func (q *queries) SetUserRole(ctx context.Context, workspaceID, id uuid.UUID, role string) (User, error) {
	u, err := q.sql.SetUserRole(ctx, q.db, dbsqlc.SetUserRoleParams{WorkspaceID: workspaceID, ID: id, Role: role})
	if err != nil {
		return User{}, notFound("user", err)
	}
	return user(u, ""), nil
}
