package dashboard_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"switchboard/browsertest"
)

// TestWorkflowsInABrowser: an admin adds a workflow on the Workflows page; a broken document
// is refused with each error at its path and line and nothing saved; the example digest is
// saved, listed, and opened on its own page. Every state passes axe-core's WCAG 2.1 AA rules
// and is photographed at phone and desktop sizes.
func TestWorkflowsInABrowser(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	axe := browsertest.AxeCore(t)
	checkAxe := func(b context.Context, what string) {
		t.Helper()
		vs := browsertest.Axe(b, t, axe)
		require.Empty(t, vs, "axe-core, %s:\n%s", what, browsertest.FormatAxe(vs))
	}
	admin := browser(t)
	s.signIn(admin, t, "admin@acme.example")
	require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+"/dashboard/workflows"), chromedp.WaitVisible(chromedp.CSS(`#workflows-none`))))
	checkAxe(admin, "no workflows")

	// A broken document: the errors at their path and line, nothing saved.
	require.NoError(t, chromedp.Do(admin,
		chromedp.SetValue(chromedp.CSS(`#document`), "name: Broken\ntrigger:\n  type: sometimes\nsteps: []\n"),
		chromedp.Submit(chromedp.CSS(`#document`)),
		chromedp.WaitVisible(chromedp.CSS(`#doc-problems`)),
	))
	problems := text(admin, t, "#doc-problems")
	require.Contains(t, problems, "trigger.type")
	require.Contains(t, problems, "(line 3)")
	checkAxe(admin, "a refused document")
	s.screenshot(admin, t, "/dashboard/workflows", "workflows-empty")

	// The example digest: saved and listed.
	doc, err := os.ReadFile("../testdata/workflows/daily-escalation-digest.yaml")
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(admin,
		chromedp.Navigate(s.url+"/dashboard/workflows"),
		chromedp.SetValue(chromedp.CSS(`#document`), string(doc)),
		chromedp.Submit(chromedp.CSS(`#document`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+"/dashboard/workflows"), chromedp.WaitVisible(chromedp.CSS(`#workflows`))))
	require.Contains(t, text(admin, t, "#workflows"), "Daily escalation digest")
	checkAxe(admin, "a workflow listed")
	s.screenshot(admin, t, "/dashboard/workflows", "workflows")

	// Its page: the document in the editor, no runs yet.
	href, err := chromedp.Run(admin, chromedp.Evaluate[string](`document.querySelector('#workflows a[href^="/dashboard/workflows/"]').getAttribute('href')`))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(href, "/dashboard/workflows/"), href)
	require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+href), chromedp.WaitVisible(chromedp.CSS(`#runs-none`))))
	checkAxe(admin, "a workflow's page")
	s.screenshot(admin, t, href, "workflow")
}
