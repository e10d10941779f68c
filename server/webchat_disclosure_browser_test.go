package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"switchboard/store"
)

// webchatVoiceAgentYAML is an agent that also takes calls, so the AI disclosure applies and
// the widget shows it.
const webchatVoiceAgentYAML = `agent:
  name: Shop Line
  language: de
  persona:
    display_name: Lena
    tone: friendly
    greeting: Hallo! Ich bin Lena. Wie kann ich helfen?
  llm:
    provider: beta
    model: beta-5.4-mini
    temperature: 0.5
    max_tokens: 300
    system_prompt: Du hilfst Kunden des Ladens.
  channels:
    - type: webchat
    - type: telco_voice
`

// TestWebchatDisclosureInABrowser: the disclosure is the first line of the conversation's
// log, not a strip above it, and the first message shows in full under it at a phone's and a
// desktop's size. Screenshots: webchat-disclosure-phone.png, webchat-disclosure-desktop.png.
func TestWebchatDisclosureInABrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agentID := b.createAgent(t, webchatVoiceAgentYAML)
	d, err := b.store.DeployAgent(context.Background(), b.workspace.ID, store.Deploy{AgentID: mustUUID(t, agentID), ChannelType: "webchat", Config: json.RawMessage(`{}`)})
	require.NoError(t, err)
	host := webchatHost(t, b.url, d.ID.String())

	dir := os.Getenv("DASHBOARD_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", dir) // relative to the repository root, as `make screenshots` gives it
	}
	for _, size := range []struct {
		name          string
		width, height int64
	}{{"phone", 390, 844}, {"desktop", 1280, 800}} {
		ctx := webchatBrowser(t, "de-DE")
		require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(size.width, size.height), chromedp.Navigate(host)))
		poll[bool](ctx, t, `!!document.querySelector("[data-switchboard-webchat]")`)
		poll[bool](ctx, t, wOpen)
		waitState(ctx, t, "ready")

		first := poll[string](ctx, t, wRoot+`.querySelector(".sbw-log").firstElementChild.className`)
		require.Equal(t, "sbw-disclosure", first, "%s: the disclosure opens the log", size.name)
		disclosure := poll[string](ctx, t, wRoot+`.querySelector(".sbw-log .sbw-disclosure").textContent`)
		require.NotEmpty(t, disclosure)
		require.NotContains(t, disclosure, "aufgezeichnet", "a chat never reads the text meant for calls")
		require.True(t, poll[bool](ctx, t, wRoot+`.querySelectorAll(".sbw-panel > p:not(.sbw-state)").length === 0`), "no strip outside the log")

		// The greeting is entirely inside the log's visible box and below the disclosure line.
		box := poll[map[string]float64](ctx, t, `(function(){var r=`+wRoot+`,log=r.querySelector(".sbw-log").getBoundingClientRect(),
			d=r.querySelector(".sbw-disclosure").getBoundingClientRect(),g=r.querySelector(".sbw-log .sbw-msg").getBoundingClientRect();
			return {logTop:log.top,logBottom:log.bottom,discBottom:d.bottom,top:g.top,bottom:g.bottom}})()`)
		require.GreaterOrEqual(t, box["top"], box["discBottom"], "%s: the greeting starts under the disclosure: %v", size.name, box)
		require.GreaterOrEqual(t, box["top"], box["logTop"], "%s: %v", size.name, box)
		require.LessOrEqual(t, box["bottom"], box["logBottom"], "%s: the greeting is not cut off: %v", size.name, box)
		greeting := poll[string](ctx, t, `(function(){var r=`+wRoot+`,g=r.querySelector(".sbw-log .sbw-msg").getBoundingClientRect();
			var e=r.elementFromPoint(g.left+g.width/2,g.top+g.height/2);return e?e.textContent:""})()`)
		require.Contains(t, greeting, "Hallo! Ich bin Lena.", "%s: nothing covers the greeting", size.name)

		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("webchat-disclosure-%s.png", size.name)), shot, 0o644))
	}
}
