package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/llm/llmtest"
)

// TestTestPageChatsInABrowser: the agent's test page, in headless Chromium, sends a message
// through POST /api/agents/{id}/chat (streamed) and shows the agent's reply. The page asks
// for a workspace key outside development; the test types one in.
func TestTestPageChatsInABrowser(t *testing.T) {
	t.Parallel()
	chrome := chromiumPath(t)
	b := setup(t)
	id := b.createAgent(t, agentYAML("Browser desk"))
	b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "We open at nine every weekday.", Chunks: 4})

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(420, 860))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTimeout()

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

// chromiumPath finds Debian's chromium (installed by scripts/ensure-chromium.sh); without it
// the test is skipped, except under CI, where a missing browser is a failure.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is missing: run scripts/ensure-chromium.sh")
	}
	t.Skip("chromium is missing: run scripts/ensure-chromium.sh")
	return ""
}
