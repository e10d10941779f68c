package server_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"switchboard/browsertest"
	"switchboard/catalog"
	"switchboard/llm/llmtest"
)

// TestTestPageChatsInABrowser: the agent's test page, in headless Chromium, sends a message
// through POST /api/agents/{id}/chat (streamed) and shows the agent's reply. The page asks
// for a workspace key outside development; the test types one in.
func TestTestPageChatsInABrowser(t *testing.T) {
	t.Parallel()
	ctx := browsertest.Start(t, 420, 860)
	b := setup(t)
	id := b.createAgent(t, agentYAML("Browser desk"))
	b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "We open at nine every weekday.", Chunks: 4})

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.url+"/agents/"+id+"/test"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=message]`)),
		chromedp.SetValue(chromedp.CSS(`#key`), b.key),
		chromedp.SendKeys(chromedp.CSS(`input[name=message]`), "When do you open?"),
		// A click, as a person would: the page sends the message itself (form.submit would navigate).
		chromedp.Click(chromedp.CSS(`#send button`)),
	))
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("log").textContent.includes("We open at nine every weekday.")`,
		chromedp.WithPollingTimeout(30*time.Second)))
	require.NoError(t, err, "the reply appears on the page")
	log, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#log`)))
	require.NoError(t, err)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.Contains(t, log, "Hi there.", "the greeting")
	require.Contains(t, log, "When do you open?")
	require.Contains(t, log, "We open at nine every weekday.")

	reqs := b.vendors[catalog.Beta].Requests()
	require.Equal(t, "When do you open?", reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1].Text,
		"the page's message reached the model through the route")
	dir := os.Getenv("DASHBOARD_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "agent-test-page-phone.png"), shot, 0o644))
}
