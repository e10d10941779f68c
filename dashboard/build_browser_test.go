package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/app"
	"switchboard/browsertest"
	"switchboard/llm"
	"switchboard/llm/llmtest"
)

// builderSite is a site whose beta models run on a server speaking the OpenAI protocol, as a
// local llama.cpp or Ollama server does (BETA_BASE_URL, any BETA_API_KEY): here a fake at the
// wire, behind the real OpenAI adapter.
func builderSite(t *testing.T) (*site, *llmtest.Fake, string) {
	fake := llmtest.NewOpenAI(t)
	s := newSite(t, func(c *app.Config) {
		c.Families["beta"] = llm.FamilyConfig{Protocol: llm.ProtocolOpenAI, BaseURL: fake.URL, APIKey: "local"}
	})
	key, sum, display := apikey.New()
	_, err := s.store.CreateKey(context.Background(), s.workspace.ID, "admin", sum, display)
	require.NoError(t, err)
	return s, fake, key
}

const bakeryYAML = `agent:
  name: Crumb bakery
  language: en
  persona:
    display_name: Crumb
    tone: friendly
    greeting: Hello! Ask me about our opening hours or place an order.
  llm:
    provider: beta
    model: beta-5.4-mini
    temperature: 0.4
    max_tokens: 400
    system_prompt: You answer questions about the bakery's opening hours and take orders.
`

// toolCall is a reply calling one tool, under an id of its own as vendors give them (the
// fake's made-up ids restart at each request, and a transcript pairs results by id).
func toolCall(name string, args any) llmtest.Reply {
	raw, _ := json.Marshal(args)
	return llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "call_" + uuid.NewString(), Name: name, Arguments: raw}}}
}

// say sends a message from the Build page's box and waits for the turn to be done and the
// conversation re-rendered.
func say(ctx context.Context, t *testing.T, message string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`#build-chat[data-idle]`)),
		chromedp.SetValue(chromedp.CSS(`#build-message`), message),
		chromedp.Click(chromedp.CSS(`#build-send`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#build-form[aria-busy]`)),
	))
}

func greetingOf(t *testing.T, s *site, key, id string) string {
	t.Helper()
	var a struct{ Agent struct{ Greeting string } }
	decode(t, call(t, http.MethodGet, s.url+"/api/agents/"+id, key, "", ""), &a)
	return a.Agent.Greeting
}

// TestBuildInABrowser: on the Build page a person asks for an agent; the model (faked at the
// wire behind the real OpenAI adapter) calls create_agent and the agent's card appears,
// linking to its page and its test chat. A risky change parks as a card: Approve runs it
// once, Reject runs nothing, and a viewer's Approve is refused with the role it takes. A
// reload keeps the conversation; an expired request says so. The page passes axe-core and is photographed.
func TestBuildInABrowser(t *testing.T) {
	t.Parallel()
	s, fake, key := builderSite(t)
	axe := browsertest.AxeCore(t)
	admin := browser(t)
	s.signIn(admin, t, "admin@acme.example")
	require.NoError(t, chromedp.Do(admin, chromedp.Navigate(s.url+"/dashboard/build"), chromedp.WaitVisible(chromedp.CSS(`#build-starters`))))
	vs := browsertest.Axe(admin, t, axe)
	require.Empty(t, vs, "axe-core, new conversation:\n%s", browsertest.FormatAxe(vs))
	s.screenshot(admin, t, "/dashboard/build", "build-start")

	// A starter prompt fills the box; the model creates the agent.
	fake.Push(toolCall("create_agent", map[string]string{"yaml": bakeryYAML}),
		llmtest.Reply{Text: "Crumb bakery is ready: try it in its test chat."})
	require.NoError(t, chromedp.Do(admin,
		chromedp.Navigate(s.url+"/dashboard/build"),
		chromedp.WaitVisible(chromedp.CSS(`#build-chat[data-idle]`)),
		chromedp.Click(chromedp.CSS(`button.starter`)),
		chromedp.Click(chromedp.CSS(`#build-send`)),
		chromedp.WaitVisible(chromedp.CSS(`li.bcard.agent`)),
	))
	require.Contains(t, fake.Requests()[0].Tools, "create_agent")
	require.Contains(t, fake.Requests()[0].Messages[0].Text, "bakery")
	card := text(admin, t, "li.bcard.agent")
	require.Contains(t, card, "Created: Crumb bakery")
	id := attr(admin, t, "li.bcard.agent", "data-agent")
	require.Equal(t, "/agents/"+id+"/test", attr(admin, t, `li.bcard.agent a[target=_blank]`, "href"))
	require.Equal(t, "/dashboard/agents/"+id, attr(admin, t, `li.bcard.agent a.button`, "href"))
	require.Contains(t, text(admin, t, "#build-thread"), "Crumb bakery is ready")

	// A reload keeps the conversation (its id is in the address).
	require.NoError(t, chromedp.Do(admin, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`li.bcard.agent`))))
	loc, err := chromedp.Run(admin, chromedp.Location())
	require.NoError(t, err)
	require.Contains(t, loc, "/dashboard/build?c=mc-")
	ref := loc[strings.Index(loc, "c=")+2:]

	// A risky change parks; Approve runs it, once.
	park := func(greeting string) {
		fake.Push(toolCall("update_agent", map[string]any{"agent_id": id, "updates": map[string]string{"greeting": greeting}}),
			llmtest.Reply{Text: "I can change the greeting once you approve."})
		say(admin, t, "Make the greeting warmer")
		require.NoError(t, chromedp.Do(admin, chromedp.WaitVisible(chromedp.CSS(`li.bcard.action.state-pending`))))
	}
	park("Welcome to Crumb! What can I bake for you?")
	require.Contains(t, text(admin, t, "li.bcard.action.state-pending"), "approving takes the member role")
	vs = browsertest.Axe(admin, t, axe)
	require.Empty(t, vs, "axe-core, a parked action:\n%s", browsertest.FormatAxe(vs))
	s.screenshot(admin, t, "/dashboard/build?c="+ref, "build")
	calls := len(fake.Requests())
	require.NoError(t, chromedp.Do(admin,
		chromedp.Click(chromedp.CSS(`li.bcard.action.state-pending button.approve`)),
		chromedp.WaitVisible(chromedp.CSS(`li.bcard.action.state-approved`)),
		chromedp.WaitNotPresent(chromedp.CSS(`li.bcard.action.state-pending`)),
	))
	require.Equal(t, calls, len(fake.Requests()), "the platform answers YES <code> itself")
	require.Equal(t, "Welcome to Crumb! What can I bake for you?", greetingOf(t, s, key, id))
	require.Contains(t, text(admin, t, "#build-thread"), "Done:")
	require.Contains(t, text(admin, t, "#build-thread"), "Created: Crumb bakery", "the first card stays")
	require.Contains(t, text(admin, t, "#build-thread"), "Changed: Crumb bakery")

	// Reject runs nothing.
	park("This greeting must never be saved.")
	fake.Push(llmtest.Reply{Text: "All right, I left it as it was."})
	require.NoError(t, chromedp.Do(admin,
		chromedp.Click(chromedp.CSS(`li.bcard.action.state-pending button.reject`)),
		chromedp.WaitVisible(chromedp.CSS(`li.bcard.action.state-rejected`)),
		chromedp.WaitNotPresent(chromedp.CSS(`li.bcard.action.state-pending`)),
	))
	require.Equal(t, "Welcome to Crumb! What can I bake for you?", greetingOf(t, s, key, id))

	// A viewer reads the conversation, and their Approve is refused with the role it takes.
	park("A viewer cannot approve this.")
	viewer := browser(t)
	s.signIn(viewer, t, "viewer@acme.example")
	require.NoError(t, chromedp.Do(viewer,
		chromedp.Navigate(s.url+"/dashboard/build?c="+ref),
		chromedp.WaitVisible(chromedp.CSS(`#build-chat[data-idle]`)),
		chromedp.Click(chromedp.CSS(`li.bcard.action.state-pending button.approve`)),
		chromedp.WaitNotPresent(chromedp.CSS(`li.bcard.action.state-pending`)),
	))
	require.Contains(t, text(viewer, t, "#build-thread"), "needs the member role")
	require.Equal(t, "Welcome to Crumb! What can I bake for you?", greetingOf(t, s, key, id))

	// A request nobody approved in time says it expired, with no buttons.
	park("Too late for this one.")
	_, err = s.store.Pool().Exec(context.Background(), `UPDATE pending_actions SET expires_at = now() - interval '1 minute'
		WHERE workspace_id = $1 AND status = 'pending'`, s.workspace.ID)
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(admin, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`li.bcard.action.state-expired`))))
	require.Contains(t, text(admin, t, "li.bcard.action.state-expired"), "expired before anyone approved it")
	html, err := chromedp.Run(admin, chromedp.OuterHTML(chromedp.CSS(`li.bcard.action.state-expired`)))
	require.NoError(t, err)
	require.NotContains(t, html, "Approve")
}

// TestBuildWithoutModelInABrowser: with no vendor configured, the Build page says plainly
// that no model can call tools and how to configure one, and offers no message box to send.
func TestBuildWithoutModelInABrowser(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := browser(t)
	s.signIn(ctx, t, "admin@acme.example")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/dashboard/build"), chromedp.WaitVisible(chromedp.CSS(`#build-no-model`))))
	notice := text(ctx, t, "#build-no-model")
	require.Contains(t, notice, "no model that can call tools")
	require.Contains(t, notice, "BETA_BASE_URL")
	disabled := attr(ctx, t, "#build-form fieldset", "disabled")
	require.NotEqual(t, "<none>", disabled, "the form is disabled")
	vs := browsertest.Axe(ctx, t, browsertest.AxeCore(t))
	require.Empty(t, vs, "axe-core:\n%s", browsertest.FormatAxe(vs))
	s.screenshot(ctx, t, "/dashboard/build", "build-no-model")
}

// attr is an attribute of the first element sel matches, "<none>" when it has none.
func attr(ctx context.Context, t *testing.T, sel, name string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
	require.NoError(t, err)
	if !v.Exists {
		return "<none>"
	}
	return v.Value
}
