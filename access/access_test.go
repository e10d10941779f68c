package access_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/access"
	"switchboard/apierr"
)

// The table as the roles issue states it, written out here independently of the code: the
// least role that may do each thing.
var want = map[access.Permission]string{
	access.Read: "viewer", access.Turns: "viewer",
	access.AgentsWrite: "member", access.Crawl: "member", access.TestLinks: "member", access.Contacts: "member",
	access.CampaignsDraft: "member", access.Inbox: "member",
	access.Deploy: "admin", access.AgentsDelete: "admin", access.Channels: "admin", access.Webhooks: "admin",
	access.Bulk: "admin", access.CampaignsStart: "admin", access.Keys: "admin", access.PhoneNumbers: "admin",
	access.Settings:       "admin",
	access.KeysPrivileged: "owner",
	access.Audit:          "admin", access.Erase: "admin",
}

func TestTheTableIsTheIssues(t *testing.T) {
	t.Parallel()
	require.Len(t, access.Permissions(), len(want), "every permission is in the expected table")
	order := []string{"viewer", "member", "admin", "owner"}
	for _, p := range access.Permissions() {
		least, ok := want[p]
		require.True(t, ok, p)
		for i, name := range order {
			r, ok := access.ParseRole(name)
			require.True(t, ok)
			mayDo := i >= indexOf(order, least)
			require.Equal(t, mayDo, r.Allows(p), "%s may %s: %v", name, p, mayDo)
		}
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func TestUnknownAndMissing(t *testing.T) {
	t.Parallel()
	_, ok := access.ParseRole("superuser")
	require.False(t, ok)
	_, ok = access.ParseRole("")
	require.False(t, ok)
	require.False(t, access.Owner.Allows("no.such.permission"), "a typo refuses")
	require.True(t, access.None.Allows(""), "the empty permission needs no role")
	require.False(t, access.None.Allows(access.Read))
}

func TestRefusalIsA403NamingTheRoleNeeded(t *testing.T) {
	t.Parallel()
	err := access.Check(access.Member, access.Deploy, "deploy_agent")
	e := apierr.As(err)
	require.NotNil(t, e)
	require.Equal(t, http.StatusForbidden, e.Status())
	require.Equal(t, "permission_error", e.Type())
	require.Equal(t, "role_not_allowed", e.Code)
	require.Contains(t, e.Message, "admin role")
	require.Contains(t, e.Message, "member key")
	require.NotEmpty(t, e.Hint)
	require.NoError(t, access.Check(access.Owner, access.Deploy, "deploy_agent"))
}
