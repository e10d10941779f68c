package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"switchboard/compliance"
	"switchboard/store"
)

// TestSettingsInABrowser: an admin sets the monthly spend cap and accepts the outbound
// compliance acknowledgment on the Settings page (who, when and which version are recorded);
// a member sees the text and who accepted it but no button, and posting anyway is 403.
func TestSettingsInABrowser(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := context.Background()
	gate, err := compliance.New(s.store, "")
	require.NoError(t, err)

	// A member first: no accept button, and posting the form by hand is refused.
	member := browser(t)
	s.signIn(member, t, "member@acme.example")
	require.NoError(t, chromedp.Do(member, chromedp.Navigate(s.url+"/dashboard/settings"), chromedp.WaitVisible(chromedp.CSS(`#compliance`))))
	html, err := chromedp.Run(member, chromedp.OuterHTML(chromedp.CSS(`main`)))
	require.NoError(t, err)
	require.Contains(t, html, "Outbound messaging: compliance acknowledgment", "everyone reads the text")
	require.NotContains(t, html, "accept-compliance", "a member has no accept button")
	require.NotContains(t, html, `action="/dashboard/settings/cap"`, "nor a cap form")
	require.Contains(t, text(member, t, "#compliance-status"), "Not accepted")
	s.screenshot(member, t, "/dashboard/settings", "settings-member")

	// Posting by hand, from the dashboard's own page (a form the page did not offer).
	_, err = chromedp.Run(member, chromedp.Evaluate[bool](`(() => { const f = document.createElement('form'); f.method = 'post'; f.action = '/dashboard/settings/compliance';
		for (const [k, v] of [['version', 'v1'], ['agree', '1']]) { const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i); }
		document.body.appendChild(f); f.submit(); return true; })()`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(member, chromedp.WaitVisible(chromedp.CSS(`p.error[role=alert]`))))
	require.Contains(t, text(member, t, "p.error"), "needs the admin role")
	// The same post with the member's session cookie answers 403.
	got, err := chromedp.Call(member, network.GetCookies, network.GetCookiesParams{})
	require.NoError(t, err)
	cookies := got.Cookies
	form := url.Values{"version": {"v1"}, "agree": {"1"}}
	req, err := http.NewRequest(http.MethodPost, s.url+"/dashboard/settings/compliance", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	ok, err := gate.Accepted(ctx, s.workspace.ID)
	require.NoError(t, err)
	require.False(t, ok, "the member's attempts recorded nothing")

	// An admin sets a cap, then accepts.
	admin := browser(t)
	s.signIn(admin, t, "admin@acme.example")
	require.NoError(t, chromedp.Do(admin,
		chromedp.Navigate(s.url+"/dashboard/settings"),
		chromedp.SendKeys(chromedp.CSS(`input[name=cap_usd]`), "40"),
		chromedp.Submit(chromedp.CSS(`input[name=cap_usd]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	require.Contains(t, text(admin, t, "p.notice"), "The monthly spend cap is $40.00")
	require.Equal(t, "$40.00", strings.TrimSpace(text(admin, t, "#cap-value")))
	w, err := s.store.WorkspaceByID(ctx, s.workspace.ID)
	require.NoError(t, err)
	require.Equal(t, int64(40_000_000_000), *w.MonthlyCapNanoUSD)

	require.NoError(t, chromedp.Do(admin,
		chromedp.Click(chromedp.CSS(`input[name=agree]`)),
		chromedp.Click(chromedp.CSS(`#accept-compliance`)),
		chromedp.WaitVisible(chromedp.CSS(`#compliance-status.notice`)), // the page after the post; its flash comes first
	))
	require.Contains(t, text(admin, t, "p.notice"), "acknowledgment v1 is accepted by admin@acme.example")
	require.Contains(t, text(admin, t, "#compliance-status"), "Accepted by admin@acme.example (admin)")
	a, ok, err := gate.Acceptance(ctx, s.workspace.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, store.ComplianceAcceptance{WorkspaceID: s.workspace.ID, Version: "v1", UserID: a.UserID, UserEmail: "admin@acme.example",
		UserRole: "admin", AcceptedAt: a.AcceptedAt}, a)
	require.NotNil(t, a.UserID)
	s.screenshot(admin, t, "/dashboard/settings", "settings")

	// The member now sees who accepted, still without a button.
	require.NoError(t, chromedp.Do(member, chromedp.Navigate(s.url+"/dashboard/settings"), chromedp.WaitVisible(chromedp.CSS(`#compliance-status`))))
	require.Contains(t, text(member, t, "#compliance-status"), "Accepted by admin@acme.example")
}
