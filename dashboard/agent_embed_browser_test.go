package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/browsertest"
)

// TestAgentEmbedSnippetInABrowser: once an agent is deployed on webchat (POST
// /api/agents/{id}/deployments), its dashboard page shows the deployment's embed snippet in a
// code block with a Copy button (static/copy.js, under the page's CSP) and the allowed
// origins; an agent without a webchat deployment says how to make one. Both pass axe-core's
// WCAG 2.1 AA rules, and the page fits a phone's width.
func TestAgentEmbedSnippetInABrowser(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := context.Background()
	key, sum, display := apikey.New()
	_, err := s.store.CreateKey(ctx, s.workspace.ID, "admin", sum, display)
	require.NoError(t, err)
	axe := browsertest.AxeCore(t)
	checkAxe := func(b context.Context, what string) {
		t.Helper()
		vs := browsertest.Axe(b, t, axe)
		require.Empty(t, vs, "axe-core, %s:\n%s", what, browsertest.FormatAxe(vs))
	}

	page := "/dashboard/agents/" + s.agentID
	admin := browser(t)
	s.signIn(admin, t, "admin@acme.example")
	require.NoError(t, chromedp.Do(admin,
		chromedp.Navigate(s.url+page),
		chromedp.WaitVisible(chromedp.CSS(`#embed`)),
	))
	require.Contains(t, text(admin, t, "#embed"), "Not deployed on webchat yet")
	checkAxe(admin, "no webchat deployment")

	resp := call(t, http.MethodPost, s.url+"/api/agents/"+s.agentID+"/deployments", key, "application/json",
		`{"channel":"webchat","config":{"allowed_origins":["https://www.crumb.example","https://shop.crumb.example"]}}`)
	var deployed struct{ DeploymentID string }
	decode(t, resp, &deployed)
	resp = call(t, http.MethodGet, s.url+"/api/agents/"+s.agentID+"/deployments", key, "", "")
	var list struct {
		Deployments []struct {
			DeploymentID string
			EmbedURL     string
			EmbedSnippet string
		}
	}
	decode(t, resp, &list)
	require.Len(t, list.Deployments, 1)
	want := list.Deployments[0]
	require.True(t, strings.HasSuffix(want.EmbedURL, "/embed/"+deployed.DeploymentID+".js"), want.EmbedURL)
	require.Equal(t, `<script src="`+want.EmbedURL+`" async></script>`, want.EmbedSnippet)

	require.NoError(t, chromedp.Do(admin,
		chromedp.Navigate(s.url+page),
		chromedp.WaitVisible(chromedp.CSS(`#embed-snippet-0`)),
	))
	require.Equal(t, want.EmbedSnippet, strings.TrimSpace(text(admin, t, "#embed-snippet-0 code")), "the snippet as the API gives it")
	embed := text(admin, t, "#embed")
	require.Contains(t, embed, deployed.DeploymentID)
	require.Contains(t, embed, "Allowed origins: https://www.crumb.example, https://shop.crumb.example")

	// The Copy button is shown by the script (hidden without it) and says what it did.
	button := `button[data-copy-text="embed-snippet-0"]`
	require.NoError(t, chromedp.Do(admin, chromedp.WaitVisible(chromedp.CSS(button)), chromedp.Click(chromedp.CSS(button))))
	said, err := chromedp.Run(admin, chromedp.Evaluate[string](`new Promise(done => { const e = document.getElementById("embed-snippet-0-status");
		const tick = () => e.textContent ? done(e.textContent) : setTimeout(tick, 20); tick(); })`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Regexp(t, `^(Copied\.|Selected: )`, said, "the button says what it did")
	if said != "Copied." { // the fallback selects exactly the snippet
		selected, err := chromedp.Run(admin, chromedp.Evaluate[string](`window.getSelection().toString()`))
		require.NoError(t, err)
		require.Equal(t, want.EmbedSnippet, strings.TrimSpace(selected))
	}
	checkAxe(admin, "a webchat deployment")
	s.fitsPhone(admin, t, page)
	s.screenshot(admin, t, page, "agent-embed")
}
