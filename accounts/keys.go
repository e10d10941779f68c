package accounts

import (
	"context"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/apikey"
	"switchboard/audit"
	"switchboard/store"
)

// Keys are managed here for /api/keys and the dashboard's keys page alike, so both refuse
// the same things:
//   - listing, creating and revoking need access.Keys (admin and above);
//   - a key of role admin or owner needs access.KeysPrivileged (owner) to create or revoke,
//     so nobody mints a key above their own rank, nor an admin revokes a peer;
//   - creating needs a session (a signed-in user, or the development user): a bearer key
//     cannot mint keys, so a leaked key cannot make itself others.

// MaxKeyNameLength is the longest key name, in characters.
const MaxKeyNameLength = 100

// ListKeys lists the keys of p's workspace.
func ListKeys(ctx context.Context, st *store.Store, p store.Principal) ([]store.APIKey, error) {
	if err := access.Check(p.Access(), access.Keys, "Listing keys"); err != nil {
		return nil, err
	}
	return st.ListKeys(ctx, p.WorkspaceID)
}

// CreateKey makes a key of role named name for p's workspace and returns it with its
// secret, which is shown this once.
func CreateKey(ctx context.Context, st *store.Store, p store.Principal, name, role string) (store.APIKey, string, error) {
	if p.KeyID != uuid.Nil {
		return store.APIKey{}, "", &apierr.Error{Kind: apierr.KindPermission, Code: "session_required",
			Message: "Creating a key needs a dashboard session; an API key cannot create keys.",
			Hint:    "Create keys on the dashboard's Keys page (/dashboard/keys), or with `switchboard keys create` as an operator."}
	}
	if _, ok := access.ParseRole(role); !ok {
		return store.APIKey{}, "", apierr.Invalid("role", "invalid_role", "The role must be one of %s.", strings.Join(access.Names(), ", "))
	}
	name = strings.TrimSpace(name)
	if len([]rune(name)) > MaxKeyNameLength {
		return store.APIKey{}, "", apierr.Invalid("name", "name_too_long", "The name may have at most %d characters.", MaxKeyNameLength)
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return store.APIKey{}, "", apierr.Invalid("name", "invalid_name", "The name may not contain control characters.")
	}
	if err := MayManageKeyOf(p.Access(), role, "Creating"); err != nil {
		return store.APIKey{}, "", err
	}
	var by *uuid.UUID
	if p.UserID != uuid.Nil {
		by = &p.UserID
	}
	secret, sum, display := apikey.New()
	var k store.APIKey
	err := st.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if k, err = tx.CreateNamedKey(ctx, p.WorkspaceID, role, name, by, sum, display); err != nil {
			return err
		}
		return audit.Record(ctx, tx, p.WorkspaceID, audit.KeyCreated, "key", k.ID.String(), map[string]any{"name": k.Name, "role": k.Role, "prefix": k.DisplayPrefix})
	})
	return k, secret, err
}

// RevokeKey revokes a key of p's workspace; it stops working at once on every replica.
// Revoking a revoked key answers it unchanged.
func RevokeKey(ctx context.Context, st *store.Store, p store.Principal, id uuid.UUID) (store.APIKey, error) {
	if err := access.Check(p.Access(), access.Keys, "Revoking keys"); err != nil {
		return store.APIKey{}, err
	}
	k, err := st.KeyByID(ctx, p.WorkspaceID, id)
	if err != nil {
		return store.APIKey{}, err
	}
	if err := MayManageKeyOf(p.Access(), k.Role, "Revoking"); err != nil {
		return store.APIKey{}, err
	}
	if k.RevokedAt == nil {
		var revoked store.APIKey
		err := st.InTx(ctx, func(tx *store.Tx) error {
			var err error
			if revoked, err = tx.RevokeKey(ctx, k.ID); err != nil {
				return err
			}
			return audit.Record(ctx, tx, p.WorkspaceID, audit.KeyRevoked, "key", k.ID.String(), map[string]any{"name": k.Name, "role": k.Role, "prefix": k.DisplayPrefix})
		})
		return revoked, err
	}
	return k, nil
}

// MayManageKeyOf checks that role r may create or revoke (verb) a key of role keyRole.
func MayManageKeyOf(r access.Role, keyRole, verb string) error {
	if err := access.Check(r, access.Keys, verb+" keys"); err != nil {
		return err
	}
	kr, _ := access.ParseRole(keyRole)
	if kr < access.Admin {
		return nil
	}
	return access.Check(r, access.KeysPrivileged, verb+" an "+keyRole+" key")
}
