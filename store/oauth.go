package store

import (
	"context"
	"crypto/subtle"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// OAuthClient is a client registered dynamically (RFC 7591) for MCP over OAuth.
type OAuthClient struct {
	ID           string
	Name         string
	RedirectURIs []string
	CreatedAt    time.Time
}

// OAuthCode is a one-time authorization code, as approved by a user.
type OAuthCode struct {
	WorkspaceID   uuid.UUID
	UserID        uuid.UUID
	ClientID      string
	RedirectURI   string
	CodeChallenge string
	ExpiresAt     time.Time
}

// OAuthTokens are the hashes of a grant's access and refresh tokens and when they expire.
type OAuthTokens struct {
	AccessSHA256, RefreshSHA256   []byte
	AccessExpires, RefreshExpires time.Time
}

// OAuthGrant is a live grant as listed on the dashboard's keys page.
type OAuthGrant struct {
	ID             uuid.UUID
	UserID         uuid.UUID
	UserEmail      string
	UserRole       string
	ClientID       string
	ClientName     string
	CreatedAt      time.Time
	LastUsedAt     *time.Time
	RefreshExpires time.Time
}

// CreateOAuthClient stores a registered client.
func (q *queries) CreateOAuthClient(ctx context.Context, id, name string, redirectURIs []string) (OAuthClient, error) {
	c, err := q.sql.CreateOAuthClient(ctx, q.db, dbsqlc.CreateOAuthClientParams{ID: id, Name: name, RedirectUris: redirectURIs})
	return OAuthClient{ID: c.ID, Name: c.Name, RedirectURIs: c.RedirectUris, CreatedAt: c.CreatedAt}, err
}

// OAuthClientByID finds a registered client; ErrNotFound when unknown.
func (q *queries) OAuthClientByID(ctx context.Context, id string) (OAuthClient, error) {
	c, err := q.sql.OAuthClient(ctx, q.db, id)
	if err != nil {
		return OAuthClient{}, notFound("client", err)
	}
	return OAuthClient{ID: c.ID, Name: c.Name, RedirectURIs: c.RedirectUris, CreatedAt: c.CreatedAt}, nil
}

// CreateOAuthCode stores the hash of a new authorization code, and removes the expired codes
// that were never exchanged.
func (q *queries) CreateOAuthCode(ctx context.Context, sum []byte, c OAuthCode) error {
	if _, err := q.sql.DeleteExpiredOAuthCodes(ctx, q.db); err != nil {
		return err
	}
	return q.sql.CreateOAuthCode(ctx, q.db, dbsqlc.CreateOAuthCodeParams{CodeSHA256: sum, WorkspaceID: c.WorkspaceID, UserID: c.UserID,
		ClientID: c.ClientID, RedirectUri: c.RedirectURI, CodeChallenge: c.CodeChallenge, ExpiresAt: c.ExpiresAt})
}

// TakeOAuthCode uses up the code hashing to sum and returns it (perhaps expired: the caller
// checks). ErrNotFound when unknown or already used.
func (q *queries) TakeOAuthCode(ctx context.Context, sum []byte) (OAuthCode, error) {
	c, err := q.sql.TakeOAuthCode(ctx, q.db, sum)
	if err != nil {
		return OAuthCode{}, notFound("code", err)
	}
	return OAuthCode{WorkspaceID: c.WorkspaceID, UserID: c.UserID, ClientID: c.ClientID, RedirectURI: c.RedirectUri,
		CodeChallenge: c.CodeChallenge, ExpiresAt: c.ExpiresAt}, nil
}

// CreateOAuthGrant stores a new grant of a user to a client.
func (q *queries) CreateOAuthGrant(ctx context.Context, workspaceID, userID uuid.UUID, clientID string, t OAuthTokens) (uuid.UUID, error) {
	g, err := q.sql.CreateOAuthGrant(ctx, q.db, dbsqlc.CreateOAuthGrantParams{WorkspaceID: workspaceID, UserID: userID, ClientID: clientID,
		AccessSHA256: t.AccessSHA256, AccessExpiresAt: t.AccessExpires, RefreshSHA256: t.RefreshSHA256, RefreshExpiresAt: t.RefreshExpires})
	return g.ID, err
}

// RefreshOAuthGrant rotates the tokens of the live grant of the client whose refresh token
// hashes to old. ErrNotFound when there is none.
func (q *queries) RefreshOAuthGrant(ctx context.Context, old []byte, clientID string, t OAuthTokens) error {
	_, err := q.sql.RefreshOAuthGrant(ctx, q.db, dbsqlc.RefreshOAuthGrantParams{OldRefreshSHA256: old, ClientID: clientID,
		AccessSHA256: t.AccessSHA256, AccessExpiresAt: t.AccessExpires, RefreshSHA256: t.RefreshSHA256, RefreshExpiresAt: t.RefreshExpires})
	return notFound("grant", err)
}

// OAuthPrincipal is who the live access token hashing to sum acts as: KeyID is the grant's id
// (its request budget), UserID the user who approved it, with the user's current role.
// ErrNotFound for an unknown, expired or revoked token.
func (q *queries) OAuthPrincipal(ctx context.Context, sum []byte) (Principal, error) {
	r, err := q.sql.OAuthPrincipal(ctx, q.db, sum)
	if err != nil {
		return Principal{}, notFound("token", err)
	}
	if subtle.ConstantTimeCompare(r.AccessSHA256, sum) != 1 {
		return Principal{}, &NotFoundError{What: "token"}
	}
	if err := q.sql.TouchOAuthGrant(ctx, q.db, r.GrantID); err != nil {
		return Principal{}, err
	}
	return Principal{KeyID: r.GrantID, UserID: r.UserID, UserEmail: r.Email, Role: r.Role, WorkspaceID: r.WorkspaceID,
		WorkspaceName: r.WorkspaceName, WorkspaceState: r.WorkspaceStatus, BalanceNanoUSD: r.BalanceNanoUSD,
		MonthlyCapNanoUSD: r.MonthlyCapNanoUSD, MonthSpendNanoUSD: monthSpend(r.SpendMonth, r.MonthSpendNanoUSD, time.Now())}, nil
}

// ListOAuthGrants lists the workspace's grants that still work or can be refreshed.
func (q *queries) ListOAuthGrants(ctx context.Context, workspaceID uuid.UUID) ([]OAuthGrant, error) {
	rows, err := q.sql.ListOAuthGrants(ctx, q.db, workspaceID)
	out := make([]OAuthGrant, 0, len(rows))
	for _, r := range rows {
		out = append(out, OAuthGrant{ID: r.ID, UserID: r.UserID, UserEmail: r.UserEmail, UserRole: r.UserRole, ClientID: r.ClientID,
			ClientName: r.ClientName, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt, RefreshExpires: r.RefreshExpiresAt})
	}
	return out, err
}

// OAuthGrantUser is the user of a grant of the workspace and the user's role; ErrNotFound
// when there is no such grant.
func (q *queries) OAuthGrantUser(ctx context.Context, workspaceID, id uuid.UUID) (uuid.UUID, string, error) {
	r, err := q.sql.OAuthGrantRole(ctx, q.db, dbsqlc.OAuthGrantRoleParams{WorkspaceID: workspaceID, ID: id})
	return r.UserID, r.Role, notFound("grant", err)
}

// RevokeOAuthGrant revokes a grant of the workspace: its tokens stop working at once.
func (q *queries) RevokeOAuthGrant(ctx context.Context, workspaceID, id uuid.UUID) error {
	n, err := q.sql.RevokeOAuthGrant(ctx, q.db, dbsqlc.RevokeOAuthGrantParams{WorkspaceID: workspaceID, ID: id})
	return affected("grant", n, err)
}

// RevokeOAuthToken revokes the grant of the client holding the access or refresh token
// hashing to sum; unknown tokens are ignored (RFC 7009).
func (q *queries) RevokeOAuthToken(ctx context.Context, sum []byte, clientID string) error {
	_, err := q.sql.RevokeOAuthToken(ctx, q.db, dbsqlc.RevokeOAuthTokenParams{SHA256: sum, ClientID: clientID})
	return err
}
