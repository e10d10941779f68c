package compliance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/compliance"
	"switchboard/store"
	"switchboard/store/storetest"
)

func TestTheRepositoryHoldsTheDefaultVersionsText(t *testing.T) {
	t.Parallel()
	require.Contains(t, compliance.Versions(), compliance.DefaultVersion)
	text, err := compliance.Text(compliance.DefaultVersion)
	require.NoError(t, err)
	require.Contains(t, text, "compliance acknowledgment")
	_, err = compliance.Text("v999")
	require.ErrorContains(t, err, "compliance/outbound-v999.md")
	_, err = compliance.New(nil, "v999")
	require.Error(t, err)
}

// TestOnlyAnOwnerOrAdminAcceptsAndEachVersionNeedsItsOwn: members, viewers and keys are
// refused; an admin's acceptance records who, when and which version; another version is not
// accepted by it.
func TestOnlyAnOwnerOrAdminAcceptsAndEachVersionNeedsItsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	w, err := st.CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)
	other, err := st.CreateWorkspace(ctx, "other", 0)
	require.NoError(t, err)
	users := map[string]store.User{}
	for _, role := range []string{"owner", "admin", "member", "viewer"} {
		u, err := st.CreateUser(ctx, w.ID, role+"@acme.example", role, []byte(strings.Repeat(role[:1], 32)), time.Now().Add(time.Hour))
		require.NoError(t, err)
		users[role] = u
	}
	principal := func(role string) store.Principal {
		u := users[role]
		return store.Principal{UserID: u.ID, UserEmail: u.Email, Role: role, WorkspaceID: w.ID, WorkspaceName: w.Name}
	}
	gate, err := compliance.New(st, "")
	require.NoError(t, err)
	require.Equal(t, "v1", gate.Version())

	ok, err := gate.Accepted(ctx, w.ID)
	require.NoError(t, err)
	require.False(t, ok)
	for _, role := range []string{"member", "viewer"} {
		_, err := gate.Accept(ctx, principal(role))
		require.Equal(t, "role_not_allowed", apierr.As(err).Code, role)
	}
	key := store.Principal{KeyID: uuid.New(), Role: "owner", WorkspaceID: w.ID}
	_, err = gate.Accept(ctx, key)
	require.Equal(t, "session_required", apierr.As(err).Code, "a key never accepts")
	ok, err = gate.Accepted(ctx, w.ID)
	require.NoError(t, err)
	require.False(t, ok)

	before := time.Now().Add(-time.Second)
	a, err := gate.Accept(ctx, principal("admin"))
	require.NoError(t, err)
	require.Equal(t, "v1", a.Version)
	require.Equal(t, "admin@acme.example", a.UserEmail)
	require.Equal(t, "admin", a.UserRole)
	require.Equal(t, users["admin"].ID, *a.UserID)
	require.True(t, a.AcceptedAt.After(before))
	ok, err = gate.Accepted(ctx, w.ID)
	require.NoError(t, err)
	require.True(t, ok)
	again, err := gate.Accept(ctx, principal("owner"))
	require.NoError(t, err)
	require.Equal(t, a, again, "accepting again keeps the first record")

	ok, err = gate.Accepted(ctx, other.ID)
	require.NoError(t, err)
	require.False(t, ok, "an acceptance is of one workspace")
	_, err = st.ComplianceAcceptance(ctx, w.ID, "v2")
	require.ErrorIs(t, err, store.ErrNotFound, "a new version needs a new acceptance")
}
