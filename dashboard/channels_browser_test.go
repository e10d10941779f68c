package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/app"
	"switchboard/browsertest"
	"switchboard/sms"
	"switchboard/sms/smstest"
	"switchboard/store"
)

// TestChannelsInABrowser: against a fake carrier, an admin connects an SMS channel (a bad
// number is refused beside its field; a number on the account is connected, one that is not
// needs setup until it is added and checked again), copies its inbound URL, and connects a
// voice number on the same number; the page names the agent answering and the last
// inbound. A viewer sees the list without a connect form or delete links, and is refused when
// posting anyway. Deleting goes through a confirmation naming the deployments that go with
// it. Every state passes axe-core's WCAG 2.1 AA rules and fits a phone's width.
func TestChannelsInABrowser(t *testing.T) {
	t.Parallel()
	fake := smstest.New(t)
	fake.AddNumber("+14155550100")
	s := newSite(t, func(c *app.Config) {
		c.SMS = sms.Config{AccountSID: smstest.AccountSID, AuthToken: smstest.AuthToken, BaseURL: fake.URL}
	})
	ctx := context.Background()
	axe := browsertest.AxeCore(t)
	checkAxe := func(b context.Context, what string) {
		t.Helper()
		vs := browsertest.Axe(b, t, axe)
		require.Empty(t, vs, "axe-core, %s:\n%s", what, browsertest.FormatAxe(vs))
	}
	channelNamed := func(name string) store.Channel {
		t.Helper()
		list, err := s.store.ListChannels(ctx, s.workspace.ID, "")
		require.NoError(t, err)
		for _, c := range list {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no channel %q", name)
		return store.Channel{}
	}

	admin := browser(t)
	s.signIn(admin, t, "admin@acme.example")
	require.NoError(t, chromedp.Do(admin,
		chromedp.Click(chromedp.CSS(`nav.main a[href="/dashboard/channels"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#connect-form`)),
	))
	require.Contains(t, text(admin, t, "#channels-none"), "No channels yet")
	checkAxe(admin, "no channels")

	// A number that is no number: refused beside the field, what was typed kept.
	require.NoError(t, chromedp.Do(admin,
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "Front desk"),
		chromedp.SendKeys(chromedp.CSS(`input[name=phone_number]`), "12"),
		chromedp.Click(chromedp.CSS(`#connect-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#phone_number-error`)),
	))
	require.Contains(t, text(admin, t, "#phone_number-error"), "config.phone_number")
	invalid, err := chromedp.Run(admin, chromedp.AttributeValue(chromedp.CSS(`input[name=phone_number]`), "aria-invalid"))
	require.NoError(t, err)
	require.Equal(t, "true", invalid.Value)
	name, err := chromedp.Run(admin, chromedp.Value(chromedp.CSS(`input[name=name]`)))
	require.NoError(t, err)
	require.Equal(t, "Front desk", name)
	checkAxe(admin, "a refused number")

	// A number on the carrier account: connected.
	require.NoError(t, chromedp.Do(admin,
		chromedp.SetValue(chromedp.CSS(`input[name=phone_number]`), "+14155550100"),
		chromedp.SendKeys(chromedp.CSS(`textarea[name=help_text]`), "Acme front desk: reply with your order number. STOP to opt out."),
		chromedp.Click(chromedp.CSS(`#connect-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	require.Contains(t, text(admin, t, "p.notice"), "The channel Front desk is connected.")
	front := channelNamed("Front desk")
	require.Equal(t, store.ChannelConnected, front.Status)
	require.Equal(t, "+14155550100", *front.Address)
	sel := "#channel-" + front.ID.String()
	require.Contains(t, text(admin, t, sel), "connected")

	// Its inbound URL, with a Copy button (the script shows it) and where to paste it.
	field := "#inbound-" + front.ID.String()
	inbound, err := chromedp.Run(admin, chromedp.Value(chromedp.CSS(field)))
	require.NoError(t, err)
	require.Regexp(t, `^https?://[^/]+/hooks/sms/[0-9a-f]{64}$`, inbound)
	require.Contains(t, text(admin, t, "#inbound-help-"+front.ID.String()), "Paste this into your carrier's messaging webhook (A message comes in → Webhook, HTTP POST)")
	require.NoError(t, chromedp.Do(admin, chromedp.Click(chromedp.CSS(`button[data-copy="inbound-`+front.ID.String()+`"]`))))
	said, err := chromedp.Run(admin, chromedp.Evaluate[string](`new Promise(done => { const e = document.getElementById("inbound-`+front.ID.String()+`-status");
		const tick = () => e.textContent ? done(e.textContent) : setTimeout(tick, 20); tick(); })`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Regexp(t, `^(Copied\.|Selected: )`, said, "the button says what it did")

	// A number not on the account needs setup, saying why; once added, Check again connects it.
	require.NoError(t, chromedp.Do(admin,
		chromedp.Navigate(s.url+"/dashboard/channels"), // a page without the last notice
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "Night line"),
		chromedp.SendKeys(chromedp.CSS(`input[name=phone_number]`), "+14155550199"),
		chromedp.Click(chromedp.CSS(`#connect-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	night := channelNamed("Night line")
	require.Equal(t, store.ChannelNeedsSetup, night.Status)
	require.Contains(t, text(admin, t, "#setup-"+night.ID.String()), "is not on this server's carrier account")
	require.Contains(t, text(admin, t, "#ch-"+night.ID.String()), "needs setup")
	fake.AddNumber("+14155550199")
	require.NoError(t, chromedp.Do(admin,
		chromedp.Navigate(s.url+"/dashboard/channels"),
		chromedp.Click(chromedp.CSS(`form[action="/dashboard/channels/`+night.ID.String()+`/check"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	require.Contains(t, text(admin, t, "p.notice"), "The channel Night line is connected.")
	require.Equal(t, store.ChannelConnected, channelNamed("Night line").Status)

	// A voice number on the same number as the front desk's texts: the number settings stay.
	require.NoError(t, chromedp.Do(admin,
		chromedp.Navigate(s.url+"/dashboard/channels"),
		chromedp.SetValue(chromedp.CSS(`select[name=provider]`), "telco_voice"),
	))
	_, err = chromedp.Run(admin, chromedp.Evaluate[bool](`document.querySelector('select[name=provider]').dispatchEvent(new Event('change'))`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(admin,
		chromedp.WaitVisible(chromedp.CSS(`#sms-settings`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "Store phone"),
		chromedp.SendKeys(chromedp.CSS(`input[name=phone_number]`), "+14155550100"),
		chromedp.Click(chromedp.CSS(`#connect-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	require.Contains(t, text(admin, t, "p.notice"), "The channel Store phone is connected")
	voice := channelNamed("Store phone")
	require.Equal(t, store.ChannelConnected, voice.Status)
	require.Equal(t, "telco_voice", voice.Provider)

	// An agent deployed for inbound on the front desk, which got a text: named and linked.
	frontID := front.ID
	_, err = s.store.DeployAgent(ctx, s.workspace.ID, store.Deploy{AgentID: uuid.MustParse(s.agentID), ChannelType: "sms", ChannelID: &frontID,
		Config: json.RawMessage(`{}`)})
	require.NoError(t, err)
	_, _, err = s.store.RecordInbound(ctx, s.workspace.ID, store.InboundMessage{ChannelID: front.ID, ProviderMessageID: "SM0000000000000000000000000000000a",
		Remote: "+14155552671", Local: "+14155550100", Body: "Hello", Segments: 1})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+"/dashboard/channels"), chromedp.WaitVisible(chromedp.CSS(sel))))
	href, err := chromedp.Run(admin, chromedp.AttributeValue(chromedp.CSS(sel+" dd.agent a"), "href"))
	require.NoError(t, err)
	require.Equal(t, "/dashboard/agents/"+s.agentID, href.Value)
	require.Equal(t, "Order desk", text(admin, t, sel+" dd.agent a"))
	require.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d UTC$`, text(admin, t, sel+" dd.last-inbound"))
	require.Equal(t, "never", text(admin, t, "#channel-"+night.ID.String()+" dd.last-inbound"))
	checkAxe(admin, "three channels")
	s.fitsPhone(admin, t, "/dashboard/channels")
	s.screenshot(admin, t, "/dashboard/channels", "channels")

	// A viewer: the list, but no form, check or delete; posting anyway is refused.
	viewer := browser(t)
	s.signIn(viewer, t, "viewer@acme.example")
	require.NoError(t, chromedp.Do(viewer, chromedp.Navigate(s.url+"/dashboard/channels"), chromedp.WaitVisible(chromedp.CSS(sel))))
	html, err := chromedp.Run(viewer, chromedp.OuterHTML(chromedp.CSS(`main`)))
	require.NoError(t, err)
	for _, name := range []string{"Front desk", "Night line", "Store phone", inbound} {
		require.Contains(t, html, name, "a viewer reads every channel")
	}
	for _, absent := range []string{"connect-form", `/delete"`, `/check"`} {
		require.NotContains(t, html, absent, "a viewer has no controls")
	}
	checkAxe(viewer, "a viewer's page")
	s.screenshot(viewer, t, "/dashboard/channels", "channels-viewer")
	_, err = chromedp.Run(viewer, chromedp.Evaluate[bool](`(() => { const f = document.createElement('form'); f.method = 'post'; f.action = '/dashboard/channels';
		for (const [k, v] of [['provider', 'sms'], ['name', 'Forged'], ['phone_number', '+14155550100']]) { const i = document.createElement('input'); i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i); }
		document.body.appendChild(f); f.submit(); return true; })()`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(viewer, chromedp.WaitVisible(chromedp.CSS(`p.error[role=alert]`))))
	require.Contains(t, text(viewer, t, "p.error"), "needs the admin role")
	got, err := chromedp.Call(viewer, network.GetCookies, network.GetCookiesParams{})
	require.NoError(t, err)
	for _, path := range []string{"/dashboard/channels", "/dashboard/channels/" + voice.ID.String() + "/delete", "/dashboard/channels/" + night.ID.String() + "/check"} {
		form := url.Values{"provider": {"sms"}, "name": {"Forged"}, "phone_number": {"+14155550100"}}
		req, err := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, c := range got.Cookies {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, path)
	}
	list, err := s.store.ListChannels(ctx, s.workspace.ID, "")
	require.NoError(t, err)
	require.Len(t, list, 3, "the viewer's posts changed nothing")

	// Deleting the front desk: a confirmation naming what goes with it, then gone with its
	// deployment.
	require.NoError(t, chromedp.Do(admin,
		chromedp.Navigate(s.url+"/dashboard/channels"),
		chromedp.Click(chromedp.CSS(`a[href="/dashboard/channels/`+front.ID.String()+`/delete"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-delete`)),
	))
	require.Contains(t, text(admin, t, "#delete-consequence"), "also removes its deployments")
	require.Contains(t, text(admin, t, "#delete-consequence"), "Order desk")
	checkAxe(admin, "the delete confirmation")
	s.screenshot(admin, t, "/dashboard/channels/"+front.ID.String()+"/delete", "channel-delete")
	require.NoError(t, chromedp.Do(admin,
		chromedp.Navigate(s.url+"/dashboard/channels/"+front.ID.String()+"/delete"),
		chromedp.Click(chromedp.CSS(`#confirm-delete`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	require.Contains(t, text(admin, t, "p.notice"), "The channel Front desk is deleted, with its deployments.")
	html, err = chromedp.Run(admin, chromedp.OuterHTML(chromedp.CSS(`main`)))
	require.NoError(t, err)
	require.NotContains(t, html, front.ID.String())
	_, err = s.store.ChannelByID(ctx, s.workspace.ID, front.ID)
	require.Error(t, err)
	deps, err := s.store.AgentDeployments(ctx, s.workspace.ID, uuid.MustParse(s.agentID))
	require.NoError(t, err)
	require.NotContains(t, deps, "sms", "the channel's deployment went with it")
}

// fitsPhone checks that the page at path needs no sideways scrolling at a phone's width.
func (s *site) fitsPhone(ctx context.Context, t *testing.T, path string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1), chromedp.EmulateMobile, chromedp.EmulateTouch),
		chromedp.Navigate(s.url+path),
		chromedp.WaitVisible(chromedp.CSS(`main`)),
	))
	over, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
	require.NoError(t, err)
	wide := ""
	if over > 0 {
		wide, err = chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth).slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)).join(', ')`))
		require.NoError(t, err)
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
	require.LessOrEqual(t, over, 0, "%s scrolls sideways at a phone's width: %s", path, wide)
}
