package accounts

import (
	"context"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/store"
)

// Invite makes a user of p's workspace with a role not above p's own (an owner or admin
// invites: the settings permission), and returns the one-time link with which the invited
// person sets a password and is signed in. The link works SetPasswordTTL (72h by default).
func (s *Service) Invite(ctx context.Context, p store.Principal, email, role string) (store.User, string, error) {
	if err := access.Check(p.Access(), access.Settings, "Inviting people"); err != nil {
		return store.User{}, "", err
	}
	r, ok := access.ParseRole(role)
	if !ok {
		return store.User{}, "", apierr.Invalid("role", "invalid_role", "The role must be one of owner, admin, member, viewer.")
	}
	if r > p.Access() {
		return store.User{}, "", &apierr.Error{Kind: apierr.KindPermission, Code: "role_not_allowed", Param: "role",
			Message: "You may invite people with a role up to your own (" + p.Role + "), not " + role + "."}
	}
	return s.CreateUser(ctx, p.WorkspaceName, email, role)
}
