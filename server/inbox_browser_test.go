package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"switchboard/browsertest"
	"switchboard/catalog"
)

// TestInboxInABrowser: two browsers. A visitor chats in the widget on a shop's page (another
// origin) and asks for a person; a member signed into the dashboard's Inbox sees the
// conversation arrive in the queue without reloading, with the navigation's count, opens it
// (the escalation's trigger and summary, the transcript), claims it and replies by keyboard
// (Ctrl+Enter). The visitor sees "Ann joined the conversation" and Ann's reply live; the
// visitor's next message reaches the member's open page live, keeping what she is typing;
// her note never reaches the visitor; she releases the conversation and the agent answers
// the visitor again. The Inbox passes axe-core's WCAG 2.1 AA rules and fits a phone;
// screenshots of both sides go to DASHBOARD_SCREENSHOTS (docs/screenshots/inbox-*.png and
// widget-human-reply.png).
func TestInboxInABrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agentID := b.createAgent(t, handoffAgentYAML)
	dep := b.deployOn(t, agentID, `{}`)
	host := webchatHost(t, b.url, dep)
	vendor := b.vendors[catalog.Gamma]
	b.newUser(t, b.workspace, "ann@acme.example", "member")
	axe := browsertest.AxeCore(t)
	checkAxe := func(ctx context.Context, what string) {
		t.Helper()
		vs := browsertest.Axe(ctx, t, axe)
		require.Empty(t, vs, "axe-core, %s:\n%s", what, browsertest.FormatAxe(vs))
	}
	shots := os.Getenv("DASHBOARD_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if !filepath.IsAbs(shots) {
		shots = filepath.Join("..", shots) // relative to the repository root
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))

	// The member signs in, opens the Inbox (nobody waits yet) and sets the name visitors see.
	member := browsertest.Start(t, 1280, 900)
	require.NoError(t, chromedp.Do(member,
		chromedp.Navigate(b.url+"/dashboard/sign-in?next=/dashboard/inbox"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "ann@acme.example"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), testPassword),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`#inbox-queue`)),
	))
	require.Contains(t, poll[string](member, t, `document.getElementById("inbox-empty").textContent`), "Nobody is waiting")
	require.NoError(t, chromedp.Do(member,
		chromedp.SetValue(chromedp.CSS(`#pref-name`), "Ann"),
		chromedp.Click(chromedp.CSS(`#pref-notify`)),
		chromedp.Click(chromedp.CSS(`#save-prefs`)),
	))
	notice(member, t, "visitors see you as Ann; you get an email when a conversation waits unclaimed")
	checkAxe(member, "an empty inbox")
	poll[bool](member, t, `document.querySelector("#inbox-live[data-live]") !== null`) // following the event feed

	// The visitor asks the agent, then for a person.
	widget := webchatBrowser(t, "en-US")
	require.NoError(t, chromedp.Do(widget, chromedp.Navigate(host)))
	poll[bool](widget, t, wOpen)
	waitState(widget, t, "ready")
	poll[bool](widget, t, wSend("Where is my parcel?"))
	poll[bool](widget, t, `(`+wLog+`).includes("reply to: Where is my parcel?")`)
	waitState(widget, t, "ready")
	poll[bool](widget, t, wSend("Can I talk to a real person please?"))
	poll[bool](widget, t, `(`+wLog+`).includes("member of our team")`)
	waitState(widget, t, "ready")

	// The member's page shows it in the queue, and the count in the navigation, unreloaded.
	poll[bool](member, t, `!!document.querySelector("#inbox-queue .inbox-list a")`)
	require.Equal(t, "1", poll[string](member, t, `document.querySelector("#nav-inbox .count").textContent`))
	require.Contains(t, poll[string](member, t, `document.getElementById("nav-inbox").textContent`), "1 waiting")
	row := poll[string](member, t, `document.querySelector("#inbox-queue .inbox-list a").textContent`)
	for _, want := range []string{"Visitor", "waiting", "webchat", "Parcel Desk", "member of our team"} {
		require.Contains(t, row, want)
	}

	// She opens it: the trigger, the summary and the transcript on one page.
	// The link's own address, read at once: the live page may replace the queue between a
	// node's lookup and a mouse click at its place (see clickNow).
	href := poll[string](member, t, `document.querySelector("#inbox-queue .inbox-list a").href`)
	require.NoError(t, chromedp.Do(member,
		chromedp.Navigate(href),
		chromedp.WaitVisible(chromedp.CSS(`#thread-transcript`)),
	))
	require.Equal(t, "user_request", poll[string](member, t, `document.getElementById("thread-trigger").textContent`))
	require.Contains(t, poll[string](member, t, `document.getElementById("thread-summary").textContent`), "Can I talk to a real person please?")
	require.Contains(t, poll[string](member, t, `document.getElementById("thread-transcript").textContent`), "Where is my parcel?")
	checkAxe(member, "a waiting conversation")
	ref := poll[string](member, t, `new URLSearchParams(location.search).get("c")`)
	require.True(t, strings.HasPrefix(ref, "mc-"), ref)

	// Claim: the visitor is told who joined.
	clickNow(member, t, `#claim`)
	notice(member, t, "You hold the conversation "+ref)
	require.Contains(t, poll[string](member, t, `document.getElementById("thread-state").textContent`), "You hold it")
	poll[bool](widget, t, `(`+wLog+`).includes("Ann joined the conversation")`)
	require.Equal(t, "Ann joined the conversation", poll[string](widget, t, wRoot+`.querySelector(".sbw-notice").textContent`))

	// Her reply, by keyboard: the visitor sees it live, under her name.
	const reply = "Hi, I'm Ann. Your parcel left our depot this morning."
	require.NoError(t, chromedp.Do(member,
		chromedp.Focus(chromedp.CSS(`#reply-text`)),
		chromedp.SendKeys(chromedp.CSS(`#reply-text`), reply),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl)),
	))
	notice(member, t, "Your reply is sent.")
	poll[bool](widget, t, `(`+wLog+`).includes(`+jsString(reply)+`)`)
	require.Equal(t, "Ann", poll[string](widget, t, wRoot+`.querySelector(".sbw-human .sbw-author").textContent`))
	require.NoError(t, chromedp.Do(widget, chromedp.EmulateViewport(1280, 800)))
	shot, err := chromedp.Run(widget, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(shots, "widget-human-reply.png"), shot, 0o644))

	// The visitor writes while Ann is typing a draft: the agent is silent, and her page shows
	// the message without losing her draft or her place.
	asked := len(vendor.Requests())
	require.NoError(t, chromedp.Do(member,
		chromedp.Focus(chromedp.CSS(`#reply-text`)),
		chromedp.SendKeys(chromedp.CSS(`#reply-text`), "Let me check the"),
	))
	poll[bool](widget, t, wSend("Thanks! When will it arrive?"))
	waitState(widget, t, "ready")
	poll[bool](member, t, `document.getElementById("thread-transcript").textContent.includes("Thanks! When will it arrive?")`)
	require.Equal(t, "Let me check the", poll[string](member, t, `document.getElementById("reply-text").value`))
	require.Equal(t, "reply-text", poll[string](member, t, `document.activeElement.id`))
	require.Len(t, vendor.Requests(), asked, "no model call while a person holds the conversation")

	// A note stays with the team.
	require.NoError(t, chromedp.Do(member,
		chromedp.SendKeys(chromedp.CSS(`#note-text`), "Customer is VIP, waived the fee"),
	))
	clickNow(member, t, `#save-note`)
	notice(member, t, "Your note is saved")
	require.Contains(t, poll[string](member, t, `document.getElementById("thread-notes").textContent`), "Customer is VIP")
	checkAxe(member, "a held conversation with a reply and a note")

	// Another visitor asks for a person: the count in the navigation follows, live.
	other := &visitor{b: b, dep: dep}
	require.Equal(t, "escalated", other.say(t, "I need a human about a damaged parcel").Status)
	poll[bool](member, t, `(document.querySelector("#nav-inbox .count") || {}).textContent === "1"`)
	mine := "/dashboard/inbox?view=mine&c=" + ref
	require.NoError(t, chromedp.Do(member, chromedp.Navigate(b.url+mine), chromedp.WaitVisible(chromedp.CSS(`#thread-transcript`))))
	require.Contains(t, poll[string](member, t, `document.querySelector("#inbox-queue .inbox-list").textContent`), "held by Ann")
	require.NotContains(t, poll[string](member, t, `document.querySelector("#inbox-queue .inbox-list").textContent`), "damaged parcel", "not hers")
	all := "/dashboard/inbox?view=all&c=" + ref
	require.NoError(t, chromedp.Do(member, chromedp.Navigate(b.url+all), chromedp.WaitVisible(chromedp.CSS(`#thread-transcript`))))
	require.Equal(t, 2, poll[int](member, t, `document.querySelectorAll("#inbox-queue .inbox-list a").length`))
	checkAxe(member, "all escalated")
	inboxShots(member, t, b.url+all, shots)

	// Release: the agent answers again.
	require.NoError(t, chromedp.Do(member, chromedp.Navigate(b.url+mine)))
	clickNow(member, t, `#release`)
	notice(member, t, "is back with its agent")
	poll[bool](widget, t, `(`+wLog+`).includes("Ann left the conversation")`)
	poll[bool](widget, t, wSend("And what are your opening hours?"))
	poll[bool](widget, t, `(`+wLog+`).includes("reply to: And what are your opening hours?")`)
	waitState(widget, t, "ready")
	require.NotContains(t, poll[string](widget, t, wLog), "VIP", "notes never reach the visitor")
	history := vendor.Requests()[len(vendor.Requests())-1].Messages
	var seen []string
	for _, m := range history {
		seen = append(seen, m.Text)
	}
	require.Contains(t, strings.Join(seen, "\n"), reply, "the agent reads Ann's reply")
}

// inboxShots photographs the Inbox at path at a desktop's and a phone's size, checking
// that it needs no sideways scrolling on the phone.
func inboxShots(ctx context.Context, t *testing.T, page, dir string) {
	t.Helper()
	for _, size := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
		}
		require.NoError(t, chromedp.Do(ctx,
			chromedp.EmulateViewport(size.width, size.height, opts...),
			chromedp.Navigate(page),
			chromedp.WaitVisible(chromedp.CSS(`main`)),
		))
		over, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
		require.NoError(t, err)
		require.LessOrEqual(t, over, 0, "the Inbox scrolls sideways at the %s's width", size.name)
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "inbox-"+size.name+".png"), shot, 0o644))
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// notice waits for the page's flash to say want (the page after a form's post), through the
// navigation the post starts.
func notice(ctx context.Context, t *testing.T, want string) {
	t.Helper()
	expr := `((document.querySelector("p.notice") || {}).textContent || "").includes(` + jsString(want) + `)`
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no notice %q (last error: %v)", want, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clickNow clicks what sel matches at the moment the click runs, in one script. The live
// inbox replaces its queue and conversation with fresh copies whenever an event arrives
// (dashboard/static/inbox.js), so a node chromedp looked up a moment before may be detached
// by the time its mouse click lands at its place, and the click does nothing (a run waited
// five minutes for the page that click should have opened).
func clickNow(ctx context.Context, t *testing.T, sel string) {
	t.Helper()
	poll[bool](ctx, t, `(() => { const e = document.querySelector(`+strconv.Quote(sel)+`); if (!e) return false; e.click(); return true; })()`)
}
