package accounts

import (
	"context"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/store"
)

// OAuth grants (MCP over OAuth, package oauth) are managed beside keys, under the same rule:
// the keys permission lists and revokes them, and a grant of an owner or admin needs the
// owner role (access.KeysPrivileged), as a key of that role would. A person may always revoke
// their own.

// ListOAuthGrants lists the live OAuth grants of p's workspace.
func ListOAuthGrants(ctx context.Context, st *store.Store, p store.Principal) ([]store.OAuthGrant, error) {
	if err := access.Check(p.Access(), access.Keys, "Listing MCP authorizations"); err != nil {
		return nil, err
	}
	return st.ListOAuthGrants(ctx, p.WorkspaceID)
}

// RevokeOAuthGrant revokes an OAuth grant of p's workspace: its access and refresh tokens
// stop working at once on every replica.
func RevokeOAuthGrant(ctx context.Context, st *store.Store, p store.Principal, id uuid.UUID) error {
	user, role, err := st.OAuthGrantUser(ctx, p.WorkspaceID, id)
	if err != nil {
		return err
	}
	if user != p.UserID || p.UserID == uuid.Nil { // a person may always revoke their own
		if err := MayManageKeyOf(p.Access(), role, "Revoking"); err != nil {
			return err
		}
	}
	return st.RevokeOAuthGrant(ctx, p.WorkspaceID, id)
}
