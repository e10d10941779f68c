package accounts

import (
	"context"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/store"
)

// SetRole changes the role of a member of p's workspace (an owner or admin: the settings
// permission), and records it in the audit log in the same transaction.
//
// The rules, like invitations': p gives a role up to its own and changes only members whose
// role is not above its own (an admin neither makes nor unmakes owners); nobody changes their
// own role, so the owner who acts stays one and a workspace never loses its last owner.
// Setting the role a member already has changes nothing and records nothing.
func (s *Service) SetRole(ctx context.Context, p store.Principal, userID uuid.UUID, role string) (store.User, error) {
	if err := access.Check(p.Access(), access.Settings, "Changing a member's role"); err != nil {
		return store.User{}, err
	}
	r, ok := access.ParseRole(role)
	if !ok {
		return store.User{}, apierr.Invalid("role", "invalid_role", "The role must be one of owner, admin, member, viewer.")
	}
	if userID == p.UserID {
		return store.User{}, &apierr.Error{Kind: apierr.KindPermission, Code: "role_not_allowed", Param: "user",
			Message: "You cannot change your own role; another owner or admin can."}
	}
	if r > p.Access() {
		return store.User{}, &apierr.Error{Kind: apierr.KindPermission, Code: "role_not_allowed", Param: "role",
			Message: "You may give a role up to your own (" + p.Role + "), not " + role + "."}
	}
	var out store.User
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		u, err := tx.UserForUpdate(ctx, p.WorkspaceID, userID)
		if err != nil {
			return err
		}
		if cur, _ := access.ParseRole(u.Role); cur > p.Access() {
			return &apierr.Error{Kind: apierr.KindPermission, Code: "role_not_allowed", Param: "user",
				Message: u.Email + " is an " + u.Role + ": only an " + u.Role + " changes their role."}
		}
		if u.Role == role {
			out = u
			return nil
		}
		if out, err = tx.SetUserRole(ctx, p.WorkspaceID, userID, role); err != nil {
			return err
		}
		return audit.Record(ctx, tx, p.WorkspaceID, audit.RoleChanged, "user", u.ID.String(),
			map[string]any{"email": u.Email, "from": u.Role, "to": role})
	})
	return out, err
}
