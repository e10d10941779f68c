package server_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"switchboard/browsertest"
	"switchboard/catalog"
	"switchboard/llm/llmtest"
)

// TestTestPageChatsInABrowser: the agent's test page, in headless Chromium, is the webchat
// widget itself (inline); it sends a message through POST /api/agents/{id}/chat (streamed)
// and shows the agent's reply. The page asks for a workspace key outside development; the
// test types one in.
func TestTestPageChatsInABrowser(t *testing.T) {
	t.Parallel()
	axe := browsertest.AxeCore(t)
	ctx := browsertest.Start(t, 420, 860)
	b := setup(t)
	id := b.createAgent(t, agentYAML("Browser desk"))
	b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "We open at nine every weekday.", Chunks: 4})

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.url+"/agents/"+id+"/test"),
		chromedp.SetValue(chromedp.CSS(`#key`), b.key),
	))
	// The same widget visitors get: its panel, its log, its form, in its shadow root.
	const root = `document.getElementById("chat").shadowRoot`
	waitState := func(state string) {
		poll[bool](ctx, t, root+`.querySelector(".sbw-panel").getAttribute("data-state") === "`+state+`"`)
	}
	waitState("ready")
	require.Contains(t, poll[string](ctx, t, root+`.querySelector(".sbw-log").textContent`), "Hi there.", "the greeting")
	vs := browsertest.Axe(ctx, t, axe)
	require.Empty(t, vs, "axe-core, test page:\n%s", browsertest.FormatAxe(vs))

	// Typed and sent as a person would: keys into the message box, Enter submits the form.
	poll[bool](ctx, t, `(function(){`+root+`.querySelector("#sbw-input").focus();return true})()`)
	require.NoError(t, chromedp.Do(ctx, chromedp.KeyEvent("When do you open?\r")))
	poll[bool](ctx, t, root+`.querySelector(".sbw-log").textContent.includes("We open at nine every weekday.")`)
	waitState("ready")
	log := poll[string](ctx, t, root+`.querySelector(".sbw-log").textContent`)
	require.Contains(t, log, "When do you open?")
	require.Contains(t, poll[string](ctx, t, `document.getElementById("state").textContent`), "status: open", "the builder sees the turn's status")
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)

	reqs := b.vendors[catalog.Beta].Requests()
	require.Equal(t, "When do you open?", reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1].Text,
		"the page's message reached the model through the route")
	dir := os.Getenv("DASHBOARD_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "agent-test-page-phone.png"), shot, 0o644))
}
