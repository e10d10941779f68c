package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/browsertest"
	"switchboard/store"
)

// TestAgentPageInABrowser: on an agent's page the blueprint editor shows a validation error
// at its line (as create_agent reports it) and saves a fix; the agent is deployed on webchat
// and undeployed from the page; the analytics equal what the routes report; a viewer gets
// no editing or deploying buttons. The page passes axe-core and is photographed.
func TestAgentPageInABrowser(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := context.Background()
	key, sum, display := apikey.New()
	_, err := s.store.CreateKey(ctx, s.workspace.ID, "admin", sum, display)
	require.NoError(t, err)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("<html><title>Opening hours</title><body>We open at eight.</body></html>"))
	}))
	t.Cleanup(site.Close)
	kb, err := s.store.KnowledgeBaseOf(ctx, s.workspace.ID, uuid.MustParse(s.agentID))
	require.NoError(t, err)
	ready, err := s.store.AddSource(ctx, s.workspace.ID, kb, store.NewSource{Type: "website_crawl", URL: site.URL + "/", Depth: 1, Status: "ready"})
	require.NoError(t, err)
	reason := "the site answered 404 Not Found"
	_, err = s.store.AddSource(ctx, s.workspace.ID, kb, store.NewSource{Type: "website_crawl", URL: "https://gone.example/", Depth: 1, Status: "failed", Error: &reason})
	require.NoError(t, err)
	// Turns the business-hours rule answered, as the event feed carries them: two of this
	// agent's; another rule's and another agent's are not counted.
	turn := func(agent, rule string) store.NewEvent {
		return store.NewEvent{Type: "turn.completed", Data: map[string]any{"agent_id": agent, "handled_by": rule, "surface": "agent"}}
	}
	_, err = s.store.AppendEvents(ctx, s.workspace.ID, []store.NewEvent{
		turn(s.agentID, "after_hours"), turn(s.agentID, "after_hours"), turn(s.agentID, "blocked_topic"),
		turn(uuid.NewString(), "after_hours"),
	})
	require.NoError(t, err)
	axe := browsertest.AxeCore(t)
	page := "/dashboard/agents/" + s.agentID
	admin := browser(t)
	s.signIn(admin, t, "admin@acme.example")
	require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+page), chromedp.WaitVisible(chromedp.CSS(`#blueprint-yaml`))))
	vs := browsertest.Axe(admin, t, axe)
	require.Empty(t, vs, "axe-core:\n%s", browsertest.FormatAxe(vs))

	// Knowledge sources with their state, a failure with its reason; a re-crawl queues one.
	knowledge := text(admin, t, "#knowledge")
	require.Contains(t, knowledge, "ready")
	require.Contains(t, knowledge, "failed\n"+reason)
	require.NoError(t, chromedp.Do(admin,
		chromedp.Click(chromedp.CSS(`#source-`+ready.ID.String()+` button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	require.Contains(t, text(admin, t, "p.notice"), "queued")
	// The same source is crawled again (its pages replaced), not a second one added beside it.
	sources, err := s.store.AgentSources(ctx, s.workspace.ID, uuid.MustParse(s.agentID))
	require.NoError(t, err)
	ids := []uuid.UUID{}
	for _, src := range sources {
		ids = append(ids, src.ID)
	}
	require.Len(t, ids, 2)
	require.Contains(t, ids, ready.ID)

	// The analytics are the routes' numbers.
	var convs struct {
		Data []struct {
			Status string
			Labels []string
		}
	}
	decode(t, call(t, http.MethodGet, s.url+"/api/conversations?agent_id="+s.agentID+"&limit=200", key, "", ""), &convs)
	escalated, labels := 0, map[string]int{}
	for _, c := range convs.Data {
		if c.Status == "escalated" {
			escalated++
		}
		for _, l := range c.Labels {
			labels[l]++
		}
	}
	require.Equal(t, strconv.Itoa(len(convs.Data)), text(admin, t, "#stat-total"))
	require.Equal(t, strconv.Itoa(escalated), text(admin, t, "#stat-escalated"))
	for l, n := range labels {
		require.Contains(t, text(admin, t, "#label-counts"), l+"\t"+strconv.Itoa(n))
	}
	require.Equal(t, "1.0", text(admin, t, "#stat-turns"), "one conversation of two messages")
	require.Equal(t, "2", text(admin, t, "#stat-after-hours"))

	// A validation error is shown at its line; the fix is saved.
	yaml, err := chromedp.Run(admin, chromedp.Value(chromedp.CSS(`#blueprint-yaml`)))
	require.NoError(t, err)
	line := 0
	for i, l := range strings.Split(yaml, "\n") {
		if strings.Contains(l, "temperature:") {
			line = i + 1
		}
	}
	require.NotZero(t, line, yaml)
	broken := strings.Replace(yaml, "temperature: 0.5", "temperature: 5", 1)
	require.NoError(t, chromedp.Do(admin,
		chromedp.SetValue(chromedp.CSS(`#blueprint-yaml`), broken),
		chromedp.Click(chromedp.CSS(`#blueprint-validate`)),
		chromedp.WaitVisible(chromedp.CSS(`#blueprint-errors`)),
	))
	errs := text(admin, t, "#blueprint-errors")
	require.Contains(t, errs, "Line "+strconv.Itoa(line))
	require.Contains(t, errs, "agent.llm.temperature")
	require.Equal(t, "bad", attr(admin, t, "#blueprint-gutter span:nth-child("+strconv.Itoa(line)+")", "class"))
	require.Equal(t, "true", attr(admin, t, "#blueprint-yaml", "aria-invalid"))
	vs = browsertest.Axe(admin, t, axe)
	require.Empty(t, vs, "axe-core, with errors:\n%s", browsertest.FormatAxe(vs))
	s.screenshotHere(admin, t, "agent-blueprint-error")

	fixed := strings.Replace(yaml, "Hi there, how can I help with your order?", "Hello! Tell me your order number.", 1)
	require.NoError(t, chromedp.Do(admin,
		chromedp.SetValue(chromedp.CSS(`#blueprint-yaml`), fixed),
		chromedp.Click(chromedp.CSS(`#blueprint-validate`)),
		chromedp.WaitVisible(chromedp.CSS(`#blueprint-valid`)),
		chromedp.Click(chromedp.CSS(`#blueprint-save`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#blueprint-valid`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	require.Contains(t, text(admin, t, "p.notice"), "is saved")
	require.Equal(t, "Hello! Tell me your order number.", greetingOf(t, s, key, s.agentID))

	// Deploy on webchat, then undeploy, from the page.
	require.NoError(t, chromedp.Do(admin,
		chromedp.SetValue(chromedp.CSS(`#deploy-channel`), "webchat"),
		chromedp.Click(chromedp.CSS(`#deploy-button`)),
		chromedp.WaitVisible(chromedp.CSS(`#deployment-webchat`)),
	))
	var deps struct{ Deployments []struct{ Channel string } }
	decode(t, call(t, http.MethodGet, s.url+"/api/agents/"+s.agentID+"/deployments", key, "", ""), &deps)
	require.Len(t, deps.Deployments, 1)
	require.Equal(t, "webchat", deps.Deployments[0].Channel)
	require.Contains(t, text(admin, t, "#embed"), "<script src=")
	s.screenshot(admin, t, page, "agent-page")
	require.NoError(t, chromedp.Do(admin,
		chromedp.Navigate(s.url+page),
		chromedp.Click(chromedp.CSS(`#deployment-webchat button`)),
		chromedp.WaitVisible(chromedp.CSS(`#no-deployments`)),
	))
	decode(t, call(t, http.MethodGet, s.url+"/api/agents/"+s.agentID+"/deployments", key, "", ""), &deps)
	require.Empty(t, deps.Deployments)

	// A viewer reads the blueprint and gets no buttons.
	viewer := browser(t)
	s.signIn(viewer, t, "viewer@acme.example")
	require.NoError(t, chromedp.Do(viewer, chromedp.Navigate(s.url+page), chromedp.WaitVisible(chromedp.CSS(`#blueprint-yaml`))))
	html, err := chromedp.Run(viewer, chromedp.OuterHTML(chromedp.CSS(`main`)))
	require.NoError(t, err)
	require.NotContains(t, html, `id="blueprint-save"`)
	require.NotContains(t, html, `id="deploy-button"`)
	require.Equal(t, "", attr(viewer, t, "#blueprint-yaml", "readonly"))
}

// screenshotHere photographs the page as it is (after a form's answer, say) at the desktop
// size only: reloading would lose what the form answered.
func (s *site) screenshotHere(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(s.shots, name+"-desktop.png"), png, 0o644))
}
