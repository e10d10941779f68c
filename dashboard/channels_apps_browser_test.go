package dashboard_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"switchboard/app"
	"switchboard/browsertest"
	"switchboard/msgapps"
	"switchboard/msgapps/msgappstest"
	"switchboard/store"
)

// TestChannelsConnectTheMessagingAppsInABrowser: against the apps faked at the wire, an admin
// picks WhatsApp on the connect form and gets its own settings (the credentials as password
// inputs), a bad phone number ID is refused beside its field with the credentials asked for
// again, and a good one connects: the card shows the account, each credential only as the
// hint the API returns, the inbound URL and where to paste it in Meta's dashboard. A Telegram
// bot connects from its token alone (getMe names the bot), and one whose token Telegram
// refuses shows why it needs setup. Every state passes axe-core and fits a phone's width.
func TestChannelsConnectTheMessagingAppsInABrowser(t *testing.T) {
	t.Parallel()
	apps := msgappstest.New(t)
	apps.RefuseToken("42:AAE-refused-token")
	s := newSite(t, func(c *app.Config) {
		c.MsgApps = msgapps.Config{GraphURL: apps.URL, InstagramURL: apps.URL + "/ig", TelegramURL: apps.URL}
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
	visible := func(b context.Context, sel string) bool {
		t.Helper()
		v, err := chromedp.Run(b, chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+"`"+sel+"`"+`); return !!e && e.offsetParent !== null; })()`))
		require.NoError(t, err)
		return v
	}
	choose := func(b context.Context, provider string) {
		t.Helper()
		require.NoError(t, chromedp.Do(b, chromedp.SetValue(chromedp.CSS(`select[name=provider]`), provider)))
		_, err := chromedp.Run(b, chromedp.Evaluate[bool](`document.querySelector('select[name=provider]').dispatchEvent(new Event('change'))`))
		require.NoError(t, err)
	}

	admin := browser(t)
	s.signIn(admin, t, "admin@acme.example")
	require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+"/dashboard/channels"), chromedp.WaitVisible(chromedp.CSS(`#connect-form`))))
	options, err := chromedp.Run(admin, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('select[name=provider] option')).map(o => o.textContent)`))
	require.NoError(t, err)
	require.Subset(t, options, []string{"WhatsApp (msgapp_1)", "Messenger (msgapp_2)", "Instagram (msgapp_3)", "Telegram (msgapp_4)"})

	// WhatsApp: its settings, and only its, once chosen; the credentials are password inputs.
	choose(admin, "msgapp_1")
	require.True(t, visible(admin, `#settings-msgapp_1`))
	for _, hidden := range []string{`#sms-settings`, `#settings-msgapp_2`, `#settings-msgapp_3`, `#settings-msgapp_4`} {
		require.False(t, visible(admin, hidden), hidden)
	}
	for _, key := range []string{"access_token", "app_secret", "verify_token"} {
		typ, err := chromedp.Run(admin, chromedp.AttributeValue(chromedp.CSS(`#msgapp_1-`+key), "type"))
		require.NoError(t, err)
		require.Equal(t, "password", typ.Value, key)
	}
	checkAxe(admin, "the WhatsApp settings")
	require.NoError(t, chromedp.Do(admin, chromedp.EmulateViewport(1280, 900)))
	s.shotNow(admin, t, "channels-connect-whatsapp")

	fill := func(phoneNumberID string) {
		t.Helper()
		require.NoError(t, chromedp.Do(admin,
			chromedp.SetValue(chromedp.CSS(`input[name=name]`), "WhatsApp line"),
			chromedp.SetValue(chromedp.CSS(`#msgapp_1-phone_number_id`), phoneNumberID),
			chromedp.SendKeys(chromedp.CSS(`#msgapp_1-access_token`), "EAAG-whatsapp-access-token-7788"),
			chromedp.SendKeys(chromedp.CSS(`#msgapp_1-app_secret`), "whatsapp-app-secret-5566"),
			chromedp.SendKeys(chromedp.CSS(`#msgapp_1-verify_token`), "verify-me-3344"),
			chromedp.Click(chromedp.CSS(`#connect-form button[type=submit]`)),
		))
	}
	// A phone number ID that is not Meta's: refused beside it, kept; the credentials are not
	// filled back in.
	fill("not-digits")
	require.NoError(t, chromedp.Do(admin, chromedp.WaitVisible(chromedp.CSS(`#msgapp_1-phone_number_id-error`))))
	require.Contains(t, text(admin, t, "#msgapp_1-phone_number_id-error"), "numeric id")
	invalid, err := chromedp.Run(admin, chromedp.AttributeValue(chromedp.CSS(`#msgapp_1-phone_number_id`), "aria-invalid"))
	require.NoError(t, err)
	require.Equal(t, "true", invalid.Value)
	kept, err := chromedp.Run(admin, chromedp.Value(chromedp.CSS(`#msgapp_1-phone_number_id`)))
	require.NoError(t, err)
	require.Equal(t, "not-digits", kept)
	require.True(t, visible(admin, `#settings-msgapp_1`), "the chosen app's settings stay shown")
	page, err := chromedp.Run(admin, chromedp.OuterHTML(chromedp.CSS(`html`)))
	require.NoError(t, err)
	require.NotContains(t, page, "whatsapp-access-token-7788", "a credential is never sent back")
	require.NotContains(t, page, "whatsapp-app-secret-5566")
	checkAxe(admin, "a refused phone number ID")

	// Connected: the account, the credentials as hints, the inbound URL and where it goes.
	fill("106540352242922")
	require.NoError(t, chromedp.Do(admin, chromedp.WaitVisible(chromedp.CSS(`p.notice`))))
	require.Contains(t, text(admin, t, "p.notice"), "The channel WhatsApp line is connected.")
	wa := channelNamed("WhatsApp line")
	require.Equal(t, store.ChannelConnected, wa.Status)
	require.Equal(t, "msgapp_1", wa.Provider)
	card := "#channel-" + wa.ID.String()
	body := text(admin, t, card)
	for _, want := range []string{"WhatsApp", "Phone number ID", "106540352242922", "Access token", "…7788", "App secret", "…5566", "Verify token", "…3344", "sealed"} {
		require.Contains(t, body, want)
	}
	page, err = chromedp.Run(admin, chromedp.OuterHTML(chromedp.CSS(`html`)))
	require.NoError(t, err)
	for _, secret := range []string{"whatsapp-access-token-7788", "whatsapp-app-secret-5566", "verify-me-3344"} {
		require.NotContains(t, page, secret)
	}
	inbound, err := chromedp.Run(admin, chromedp.Value(chromedp.CSS("#inbound-"+wa.ID.String())))
	require.NoError(t, err)
	require.Regexp(t, `^https?://[^/]+/hooks/msgapp_1/[0-9a-f]{64}$`, inbound)
	require.Contains(t, text(admin, t, "#inbound-help-"+wa.ID.String()), "WhatsApp → Configuration → Webhook")

	// Telegram: the bot token alone; getMe names the bot.
	require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+"/dashboard/channels"), chromedp.WaitVisible(chromedp.CSS(`#connect-form`))))
	choose(admin, "msgapp_4")
	require.True(t, visible(admin, `#settings-msgapp_4`))
	require.False(t, visible(admin, `#settings-msgapp_1`))
	require.NoError(t, chromedp.Do(admin,
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "Support bot"),
		chromedp.SendKeys(chromedp.CSS(`#msgapp_4-bot_token`), "123456789:AAE-telegram-bot-token"),
		chromedp.Click(chromedp.CSS(`#connect-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	bot := channelNamed("Support bot")
	require.Equal(t, store.ChannelConnected, bot.Status)
	body = text(admin, t, "#channel-"+bot.ID.String())
	require.Contains(t, body, "@test_bot")
	require.Contains(t, body, "Bot ID")
	require.Contains(t, body, "123456789")
	require.NotContains(t, body, "AAE-telegram-bot-token")
	require.Contains(t, text(admin, t, "#inbound-help-"+bot.ID.String()), "nothing to paste")

	// A token Telegram refuses: stored as needing setup, saying why.
	require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+"/dashboard/channels"), chromedp.WaitVisible(chromedp.CSS(`#connect-form`))))
	choose(admin, "msgapp_4")
	require.NoError(t, chromedp.Do(admin,
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "Old bot"),
		chromedp.SendKeys(chromedp.CSS(`#msgapp_4-bot_token`), "42:AAE-refused-token"),
		chromedp.Click(chromedp.CSS(`#connect-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	old := channelNamed("Old bot")
	require.Equal(t, store.ChannelNeedsSetup, old.Status)
	require.Contains(t, text(admin, t, "#setup-"+old.ID.String()), "Telegram did not accept the bot token")
	require.Contains(t, text(admin, t, "#ch-"+old.ID.String()), "needs setup")
	checkAxe(admin, "three messaging app channels")
	s.fitsPhone(admin, t, "/dashboard/channels")
	s.screenshot(admin, t, "/dashboard/channels", "channels-apps")
}

// shotNow saves the page as it is (a form filled in, a script's choice) at a desktop's size.
func (s *site) shotNow(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.Greater(t, len(png), 1000)
	require.NoError(t, os.WriteFile(filepath.Join(s.shots, name+"-desktop.png"), png, 0o644))
}
