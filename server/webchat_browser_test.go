package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"switchboard/browsertest"
	"switchboard/catalog"
	"switchboard/llm/llmtest"
	"switchboard/store"
	"switchboard/webchat"
)

// WebchatCSP is the Content-Security-Policy of the test's host page: what the README tells a
// site with a strict policy to add for the widget (BASE is the Switchboard origin).
const webchatCSP = "default-src 'none'; script-src BASE; connect-src BASE; style-src BASE; img-src 'self'"

// webchatHost serves a host page from a second origin with the embed line and a strict CSP.
func webchatHost(t *testing.T, base, dep string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Security-Policy", strings.ReplaceAll(webchatCSP, "BASE", base))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><main><h1>The shop</h1><p>Welcome to our shop.</p></main>
<script src="%s/embed/%s.js" async></script></body></html>`, base, dep)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// webchatBrowser starts a headless Chromium of its own (a fresh profile: a new visitor).
func webchatBrowser(t *testing.T, lang string) context.Context {
	t.Helper()
	ctx := browsertest.Start(t, 1280, 800)
	// The browser's language (navigator.language), as a visitor's browser would have it.
	ua, err := chromedp.Run(ctx, chromedp.Evaluate[string]("navigator.userAgent"))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		return tg.Call(ctx, "Emulation.setUserAgentOverride", map[string]string{"userAgent": ua, "acceptLanguage": lang}, nil)
	})))
	return ctx
}

// In the widget's shadow root.
const (
	wRoot   = `document.querySelector("[data-switchboard-webchat]").shadowRoot`
	wOpen   = `(function(){var h=document.querySelector("[data-switchboard-webchat]");if(!h)return false;h.shadowRoot.querySelector("button").click();return true})()`
	wState  = wRoot + `.querySelector(".sbw-panel") && ` + wRoot + `.querySelector(".sbw-panel").getAttribute("data-state")`
	wLog    = wRoot + `.querySelector(".sbw-log").textContent`
	wStatus = wRoot + `.querySelector(".sbw-state").textContent`
)

func wSend(text string) string {
	return `(function(){var r=` + wRoot + `;r.querySelector("#sbw-input").value=` + fmt.Sprintf("%q", text) +
		`;r.querySelector(".sbw-form").requestSubmit();return true})()`
}

func poll[T any](ctx context.Context, t *testing.T, expr string) T {
	t.Helper()
	var v T
	var err error
	// A page that is still settling after a navigation can swap its JavaScript context under
	// a poll (CDP "Cannot find context with specified id", seen on a loaded machine): the
	// poll starts again in the new one. A minute per poll: with `make test` running the
	// browser tests of two packages side by side, four at a time each, a widget's turn once
	// took more than 30 s to come back ready on a fresh clone's run; a hang is still a failure.
	for range 3 {
		v, err = chromedp.Run(ctx, chromedp.Poll[T](expr, chromedp.WithPollingTimeout(time.Minute)))
		if err == nil || !strings.Contains(err.Error(), "Cannot find context with specified id") {
			break
		}
	}
	require.NoError(t, err, expr)
	return v
}

func waitState(ctx context.Context, t *testing.T, state string) {
	t.Helper()
	poll[bool](ctx, t, `(`+wState+`) === "`+state+`"`)
}

func TestWebchatWidgetInABrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, dep := b.deployWebchat(t, `{}`)
	host := webchatHost(t, b.url, dep)
	vendor := b.vendors[catalog.Beta]
	vendor.Push(llmtest.Reply{Text: "Wir öffnen um neun Uhr.", Chunks: 4})

	axe := browsertest.AxeCore(t)
	ctx := webchatBrowser(t, "de-DE")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(host)))
	// WCAG 2.1 AA with the widget closed (the launcher on the host page)...
	poll[bool](ctx, t, `!!document.querySelector("[data-switchboard-webchat]")`)
	vs := browsertest.Axe(ctx, t, axe)
	require.Empty(t, vs, "axe-core, widget closed:\n%s", browsertest.FormatAxe(vs))
	poll[bool](ctx, t, wOpen)
	waitState(ctx, t, "ready")
	require.Contains(t, poll[string](ctx, t, wLog), "Hallo! Ich bin Lena.", "the greeting")
	label := poll[string](ctx, t, wRoot+`.querySelector("label[for=sbw-input]").textContent`)
	require.Equal(t, "Ihre Nachricht", label, "German strings from the browser's locale")

	poll[bool](ctx, t, wSend("Wann öffnet ihr?"))
	poll[bool](ctx, t, `(`+wLog+`).includes("Wir öffnen um neun Uhr.")`)
	waitState(ctx, t, "ready") // the reply is complete and kept
	// ...and open, with a conversation in it.
	vs = browsertest.Axe(ctx, t, axe)
	require.Empty(t, vs, "axe-core, widget open:\n%s", browsertest.FormatAxe(vs))

	dir := os.Getenv("DASHBOARD_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(size[0], size[1])))
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("webchat-%dx%d.png", size[0], size[1])), shot, 0o644))
	}

	// A reload keeps the conversation (and the widget open).
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	waitState(ctx, t, "ready")
	after := poll[string](ctx, t, `(`+wLog+`).includes("Wir öffnen um neun Uhr.") && `+wLog)
	require.Contains(t, after, "Wann öffnet ihr?")

	// The next message continues the same conversation.
	vendor.Push(llmtest.Reply{Text: "Bis 18 Uhr."})
	poll[bool](ctx, t, wSend("Und bis wann?"))
	poll[bool](ctx, t, `(`+wLog+`).includes("Bis 18 Uhr.")`)
	waitState(ctx, t, "ready")
	require.Equal(t, 1, b.count(t, "conversations"))

	// A second visitor (a fresh browser) sees none of it, and gets a conversation of their own.
	other := webchatBrowser(t, "en-US")
	require.NoError(t, chromedp.Do(other, chromedp.Navigate(host)))
	poll[bool](other, t, wOpen)
	waitState(other, t, "ready")
	log := poll[string](other, t, wLog)
	require.NotContains(t, log, "Wann öffnet ihr?")
	require.NotContains(t, log, "Wir öffnen")
	vendor.Push(llmtest.Reply{Text: "Hello there."})
	poll[bool](other, t, wSend("Hi"))
	poll[bool](other, t, `(`+wLog+`).includes("Hello there.")`)
	waitState(other, t, "ready")
	require.Equal(t, 2, b.count(t, "conversations"))
}

func TestWebchatWidgetRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// An origin outside allowed_origins: the widget says unavailable.
	_, fenced := b.deployWebchat(t, `{"allowed_origins":["https://shop.example"]}`)
	ctx := webchatBrowser(t, "en-US")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(webchatHost(t, b.url, fenced))))
	poll[bool](ctx, t, wOpen)
	waitState(ctx, t, "unavailable")
	require.Equal(t, "This chat is unavailable right now.", poll[string](ctx, t, wStatus))

	// A disabled agent: unavailable too, and no model call.
	agentID, dep := b.deployWebchat(t, `{}`)
	_, err := b.store.Pool().Exec(context.Background(), "UPDATE agents SET status = 'disabled' WHERE id = $1", agentID)
	require.NoError(t, err)
	host := webchatHost(t, b.url, dep)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(host)))
	poll[bool](ctx, t, wOpen)
	waitState(ctx, t, "unavailable")

	// A visitor over their budget sees the wait message (the budget is spent from this
	// machine's address, which the browser shares).
	_, err = b.store.Pool().Exec(context.Background(), "UPDATE agents SET status = 'enabled' WHERE id = $1", agentID)
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Reload()))
	waitState(ctx, t, "ready")
	for range webchat.VisitorRPM {
		resp, _ := b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "", `{"message":" "}`)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	}
	poll[bool](ctx, t, wSend("Hello?"))
	waitState(ctx, t, "wait")
	require.Contains(t, poll[string](ctx, t, wStatus), "please wait")
	require.Equal(t, 0, b.count(t, "conversations"))
}

// A visitor an operator blocks sees that the chat is not available to them; a workspace over
// its monthly spend cap shows the chat as paused. Neither is silent.
func TestWebchatWidgetBlockedAndPaused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, dep := b.deployWebchat(t, `{}`)
	host := webchatHost(t, b.url, dep)
	b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "Guten Tag."})

	ctx := webchatBrowser(t, "en-US")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(host)))
	poll[bool](ctx, t, wOpen)
	waitState(ctx, t, "ready")
	poll[bool](ctx, t, wSend("Hello"))
	poll[bool](ctx, t, `(`+wLog+`).includes("Guten Tag.")`)
	waitState(ctx, t, "ready")

	var visitor string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(),
		`SELECT short_id FROM conversations WHERE workspace_id = $1 AND channel = 'webchat'`, b.workspace.ID).Scan(&visitor))
	resp, raw := b.do(t, http.MethodPost, "/api/webchat/blocked-visitors", "Bearer "+b.key, `{"visitor_id":"`+visitor+`"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	poll[bool](ctx, t, wSend("Still there?"))
	waitState(ctx, t, "blocked")
	require.Equal(t, "This chat is not available to you.", poll[string](ctx, t, wStatus))

	_, err := b.store.Pool().Exec(context.Background(),
		`UPDATE workspaces SET monthly_cap_nano_usd = 1000, month_spend_nano_usd = 1000 WHERE id = $1`, b.workspace.ID)
	require.NoError(t, err)
	fresh := webchatBrowser(t, "fr-FR")
	require.NoError(t, chromedp.Do(fresh, chromedp.Navigate(host)))
	poll[bool](fresh, t, wOpen)
	waitState(fresh, t, "paused")
	require.Equal(t, "Ce chat est en pause pour le moment. Veuillez réessayer plus tard.", poll[string](fresh, t, wStatus))
	require.Equal(t, 1, b.count(t, "conversations"))
}

// The widget works with the keyboard alone: Tab reaches the launcher, Enter opens the widget
// with the focus in the message box, Enter sends, Escape closes it and gives the focus back to
// the launcher.
func TestWebchatWidgetByKeyboard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, dep := b.deployWebchat(t, `{}`)
	b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "Gern geschehen."})

	ctx := webchatBrowser(t, "en-US")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(webchatHost(t, b.url, dep))))
	poll[bool](ctx, t, `!!document.querySelector("[data-switchboard-webchat]")`)
	const focused = wRoot + `.activeElement`
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("\t")))
	require.Equal(t, "Open chat", poll[string](ctx, t, `(`+focused+` || {getAttribute: function(){return ""}}).getAttribute("aria-label")`))
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("\r")))
	waitState(ctx, t, "ready")
	poll[bool](ctx, t, `(`+focused+` || {}).id === "sbw-input"`)
	require.Equal(t, "true", poll[string](ctx, t, wRoot+`.querySelector("button[aria-controls]").getAttribute("aria-expanded")`))

	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("Danke!\r")))
	poll[bool](ctx, t, `(`+wLog+`).includes("Gern geschehen.")`)
	waitState(ctx, t, "ready")

	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent(kb.Escape)))
	poll[bool](ctx, t, wRoot+`.querySelector(".sbw-panel").hidden`)
	require.Equal(t, "Open chat", poll[string](ctx, t, `(`+focused+` || {getAttribute: function(){return ""}}).getAttribute("aria-label")`), "the focus is back on the launcher")
	require.Equal(t, "false", poll[string](ctx, t, wRoot+`.querySelector("button[aria-controls]").getAttribute("aria-expanded")`))
}

const webchatRulesAgentYAML = `agent:
  name: Night Desk
  language: en
  persona:
    display_name: Nora
    tone: friendly
    greeting: Hi, I'm Nora.
  llm:
    provider: beta
    model: beta-5.4-mini
    temperature: 0.5
    max_tokens: 200
    system_prompt: You help customers of an online shop.
  channels:
    - type: webchat
  business_rules:
    business_hours:
      timezone: Europe/Berlin
      schedule:
        monday: {start: "09:00", end: "17:00"}
      after_hours_message: We are closed. Come back during opening hours.
    escalation:
      enabled: true
      trigger: user_request
      action: transfer_to_human
      pickup_timeout_minutes: 10
`

// After-hours and escalation replies show in the widget as the agent sends them, and a turn
// a person from the team has (no reply) says so instead of showing an empty bubble.
func TestWebchatWidgetAfterHoursAndEscalation(t *testing.T) {
	t.Parallel()
	clock := newClock(t, "2026-11-23T06:00:00Z") // Monday 07:00 in Berlin: closed
	b := setup(t, func(o *setupOpts) { o.clock = clock.Now })
	agentID := b.createAgent(t, webchatRulesAgentYAML)
	d, err := b.store.DeployAgent(context.Background(), b.workspace.ID, store.Deploy{AgentID: mustUUID(t, agentID),
		ChannelType: "webchat", Config: json.RawMessage(`{}`)})
	require.NoError(t, err)

	ctx := webchatBrowser(t, "en-US")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(webchatHost(t, b.url, d.ID.String()))))
	poll[bool](ctx, t, wOpen)
	waitState(ctx, t, "ready")
	poll[bool](ctx, t, wSend("Are you open?"))
	poll[bool](ctx, t, `(`+wLog+`).includes("We are closed. Come back during opening hours.")`)
	waitState(ctx, t, "ready")
	require.Empty(t, b.vendors[catalog.Beta].Requests(), "after hours, no model call")

	clock.Advance(4 * time.Hour) // 11:00 in Berlin: open
	poll[bool](ctx, t, wSend("Can I talk to a real person please?"))
	poll[bool](ctx, t, `(`+wLog+`).includes("member of our team")`)
	waitState(ctx, t, "ready")

	poll[bool](ctx, t, wSend("Hello?"))
	waitState(ctx, t, "ready")
	require.Equal(t, "Your message was passed on to a person from our team.", poll[string](ctx, t, wStatus))
	require.Equal(t, 6, poll[int](ctx, t, wRoot+`.querySelectorAll(".sbw-msg").length`),
		"the greeting, three messages and two replies: no empty bubble")
}
