package server_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/audit"
)

// TestMemberRoleChangeRules: the Settings page's Members table changes roles up to the
// changer's own, never the changer's own nor a higher one's, and a refused change writes
// nothing (neither the role nor an audit entry).
func TestMemberRoleChangeRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	owner := b.signedIn(t, "owner")
	admin := b.signedIn(t, "admin")
	viewer := b.signedIn(t, "viewer")
	userID := func(br *browser) string {
		u, err := b.store.UserByEmail(ctx, br.email)
		require.NoError(t, err)
		return u.ID.String()
	}
	setRole := func(br *browser, target, role string) (int, string) {
		t.Helper()
		resp, err := br.client.PostForm(b.url+"/dashboard/settings/members/"+target+"/role", url.Values{"role": {role}})
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	roleOf := func(br *browser) string {
		u, err := b.store.UserByEmail(ctx, br.email)
		require.NoError(t, err)
		return u.Role
	}

	for _, c := range []struct {
		by         *browser
		target     string
		role, want string
		status     int
	}{
		{admin, userID(owner), "member", "an owner", http.StatusForbidden},
		{admin, userID(viewer), "owner", "up to your own (admin)", http.StatusForbidden},
		{admin, userID(admin), "viewer", "your own role", http.StatusForbidden},
		{viewer, userID(admin), "viewer", "needs the admin role", http.StatusForbidden},
		{owner, userID(viewer), "superuser", "must be one of", http.StatusBadRequest},
		{owner, "00000000-0000-4000-8000-000000000000", "member", "No user", http.StatusNotFound},
	} {
		status, page := setRole(c.by, c.target, c.role)
		require.Equal(t, c.status, status, page)
		require.Contains(t, page, c.want)
	}
	require.Equal(t, "owner", roleOf(owner))
	require.Equal(t, "admin", roleOf(admin))
	require.Equal(t, "viewer", roleOf(viewer))
	require.Empty(t, b.auditLog(t, "action="+audit.RoleChanged).Data, "a refused change is not recorded")

	// Another workspace's person is not found from this one.
	ws2, err := b.store.CreateWorkspace(ctx, "rival", 1_000_000_000)
	require.NoError(t, err)
	b.newUser(t, ws2, "stranger@example.com", "member")
	stranger, err := b.store.UserByEmail(ctx, "stranger@example.com")
	require.NoError(t, err)
	status, _ := setRole(owner, stranger.ID.String(), "viewer")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "member", func() string { u, _ := b.store.UserByEmail(ctx, "stranger@example.com"); return u.Role }())

	// An admin changes a viewer to member, then the same role again: one entry.
	for range 2 {
		status, page := setRole(admin, userID(viewer), "member")
		require.Equal(t, http.StatusSeeOther, status, page) // back to Settings, with a flash
	}
	require.Equal(t, "member", roleOf(viewer))
	e := b.onlyEntry(t, audit.RoleChanged)
	require.Equal(t, admin.email, e.Actor.Label)
	require.Equal(t, "admin", e.Actor.Role)
	require.Equal(t, map[string]any{"email": viewer.email, "from": "viewer", "to": "member"}, e.Summary)

	// An owner makes an admin an owner.
	status, _ = setRole(owner, userID(admin), "owner")
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "owner", roleOf(admin))
}
