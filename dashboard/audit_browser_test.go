package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"switchboard/audit"
	"switchboard/browsertest"
	"switchboard/dashboard"
	"switchboard/store"
)

// TestAuditLogInABrowser: an admin reads the Audit log page, filters it by action and by
// actor, and follows its pages without overlap back to the newest; a bad filter says what is
// wrong; a member has no link to the page and is refused it. The page passes axe-core and is
// photographed.
func TestAuditLogInABrowser(t *testing.T) {
	t.Parallel()
	s := newSite(t) // its two agents were created with an admin key: two agent.created entries
	ctx := context.Background()
	// A page and a half of a scheduled job's changes (the system's).
	for i := range dashboard.AuditPageSize + 5 {
		require.NoError(t, s.store.InTx(ctx, func(tx *store.Tx) error {
			return audit.Record(ctx, tx, s.workspace.ID, audit.RetentionChanged, "workspace", s.workspace.ID.String(), map[string]any{"to": i + 1})
		}))
	}
	total := dashboard.AuditPageSize + 5 + 2

	member := browser(t)
	s.signIn(member, t, "member@acme.example")
	nav, err := chromedp.Run(member, chromedp.OuterHTML(chromedp.CSS(`nav.main`)))
	require.NoError(t, err)
	require.NotContains(t, nav, "/dashboard/audit-log", "a member has no link to the audit log")
	require.NoError(t, chromedp.Do(member, chromedp.Navigate(s.url+"/dashboard/audit-log"), chromedp.WaitVisible(chromedp.CSS(`p.error`))))
	require.Contains(t, text(member, t, "p.error"), "needs the admin role")
	require.NotContains(t, text(member, t, "main"), "retention.changed")

	admin := browser(t)
	s.signIn(admin, t, "admin@acme.example")
	axe := browsertest.AxeCore(t)
	require.NoError(t, chromedp.Do(admin, chromedp.Click(chromedp.CSS(`nav.main a[href="/dashboard/audit-log"]`)), chromedp.WaitVisible(chromedp.CSS(`#audit-entries`))))
	vs := browsertest.Axe(admin, t, axe)
	require.Empty(t, vs, "axe-core:\n%s", browsertest.FormatAxe(vs))

	rows := func() []string {
		t.Helper()
		// A link's page is read once parsed whole: right after a click, the new document
		// may still be streaming in (CI once read 38 of its 50 rows, the last one cut).
		_, err := chromedp.Run(admin, chromedp.Poll[bool](`document.readyState !== 'loading'`))
		require.NoError(t, err)
		out, err := chromedp.Run(admin, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#audit-entries tbody tr')].map(r => r.innerText)`))
		require.NoError(t, err)
		return out
	}
	// Newest first: the last of the system's changes leads; pages follow without overlap.
	first := rows()
	require.Len(t, first, dashboard.AuditPageSize)
	require.Contains(t, first[0], "retention.changed")
	require.Contains(t, first[0], fmt.Sprintf(`{"to":%d}`, dashboard.AuditPageSize+5))
	require.Contains(t, first[0], "(system)")
	require.NoError(t, chromedp.Do(admin, chromedp.Click(chromedp.CSS(`#audit-older`)), chromedp.WaitVisible(chromedp.CSS(`#audit-newest`))))
	second := rows()
	require.Len(t, second, total-dashboard.AuditPageSize)
	require.Contains(t, second[len(second)-1], "agent.created", "the oldest entry: the site's first agent")
	require.Contains(t, second[len(second)-1], "(key, admin)")
	require.NotContains(t, strings.Join(first, "\n"), second[0])
	noOlder, err := chromedp.Run(admin, chromedp.Evaluate[bool](`document.querySelector('#audit-older') === null`))
	require.NoError(t, err)
	require.True(t, noOlder, "the last page links no older one")
	require.NoError(t, chromedp.Do(admin, chromedp.Click(chromedp.CSS(`#audit-newest`)), chromedp.WaitNotPresent(chromedp.CSS(`#audit-newest`))))
	require.Equal(t, first, rows())

	// Filters: by action, then by actor; the filter stays in the form.
	require.NoError(t, chromedp.Do(admin,
		chromedp.SetValue(chromedp.CSS(`select[name=action]`), audit.AgentCreated),
		chromedp.Submit(chromedp.CSS(`select[name=action]`)),
		chromedp.WaitVisible(chromedp.CSS(`a[href="/dashboard/audit-log"]`)), // Clear filters
	))
	got := rows()
	require.Len(t, got, 2)
	require.Contains(t, got[0], "Returns helper")
	require.Contains(t, got[1], "Order desk")
	action, err := chromedp.Run(admin, chromedp.Value(chromedp.CSS(`select[name=action]`)))
	require.NoError(t, err)
	require.Equal(t, audit.AgentCreated, action)
	s.screenshot(admin, t, "/dashboard/audit-log", "audit-log")

	require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+"/dashboard/audit-log?actor=system"), chromedp.WaitVisible(chromedp.CSS(`#audit-older`))))
	require.Len(t, rows(), dashboard.AuditPageSize)
	require.NotContains(t, strings.Join(rows(), "\n"), "agent.created")

	// A day range that holds nothing, and bad filters, named.
	require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+"/dashboard/audit-log?until=2001-01-01"), chromedp.WaitVisible(chromedp.CSS(`#audit-none`))))
	for query, want := range map[string]string{
		"since=yesterday":   "since must be a day",
		"actor=somebody":    "actor must be a user or key id",
		"action=agent.lost": "action must be one of the audited actions",
	} {
		require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+"/dashboard/audit-log?"+query), chromedp.WaitVisible(chromedp.CSS(`#audit-error`))))
		require.Contains(t, text(admin, t, "#audit-error"), want, query)
		require.Contains(t, text(admin, t, "#audit-none"), "No entry matches", query)
	}
}
