package dashboard_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/accounts"
	"switchboard/apikey"
	"switchboard/app"
	"switchboard/browsertest"
	"switchboard/catalog"
	"switchboard/store"
	"switchboard/store/storetest"
)

// The browser tests drive headless Chromium (Debian's `chromium`; `make test` installs it
// through scripts/ensure-chromium.sh). Without it they are skipped, except under CI, where
// a missing browser fails. Screenshots of every page at a phone's and a desktop's size are
// written to DASHBOARD_SCREENSHOTS (`make screenshots` sets docs/screenshots), else to a
// temporary directory.

const password = "correct horse battery staple"

type site struct {
	url       string
	store     *store.Store
	workspace store.Workspace
	agentID   string
	convRef   string
	shots     string
}

// newSite starts a production-mode server with a workspace, users of four roles, two agents
// with a conversation each, 30 days of spend and a webhook endpoint with attempts. configure,
// if given, changes the server's configuration first (a fake carrier, say).
func newSite(t *testing.T, configure ...func(*app.Config)) *site {
	st := storetest.New(t)
	cfg := app.DefaultConfig()
	cfg.WebhookAllowPrivate = true
	for _, c := range configure {
		c(&cfg)
	}
	ctx := context.Background()
	a, err := app.New(cfg, st, catalog.Default(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	require.NoError(t, a.Start(runCtx))
	ts := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		ts.Close()
		cancel()
		stopCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		_ = a.Stop(stopCtx)
	})
	s := &site{url: ts.URL, store: st}
	s.workspace, err = st.CreateWorkspace(ctx, "acme", 25_000_000_000)
	require.NoError(t, err)
	for _, role := range []string{"owner", "admin", "member", "viewer"} {
		u, err := st.CreateUser(ctx, s.workspace.ID, role+"@acme.example", role, []byte(strings.Repeat(role[:1], 32)), time.Now().Add(time.Hour))
		require.NoError(t, err)
		hash, err := accounts.HashPassword(password)
		require.NoError(t, err)
		_, err = st.SetPassword(ctx, s.workspace.ID, u.ID, hash)
		require.NoError(t, err)
	}
	key, sum, display := apikey.New()
	_, err = st.CreateKey(ctx, s.workspace.ID, "admin", sum, display)
	require.NoError(t, err)

	for i, name := range []string{"Order desk", "Returns helper"} {
		resp := call(t, http.MethodPost, s.url+"/api/agents", key, "application/yaml", agentYAML(name))
		var out struct{ AgentID string }
		decode(t, resp, &out)
		id := uuid.MustParse(out.AgentID)
		if i == 0 {
			s.agentID = out.AgentID
		}
		ref, err := st.CreateAgentConversation(ctx, s.workspace.ID, id, "webchat", []string{"orders"})
		require.NoError(t, err)
		c, err := st.ConversationByRef(ctx, s.workspace.ID, ref)
		require.NoError(t, err)
		require.NoError(t, st.AppendMessages(ctx, s.workspace.ID, c.ID, []store.Message{
			{Role: "user", Content: "Where is my order 1234?"},
			{Role: "assistant", Content: "Order 1234 left our warehouse yesterday; it arrives on Thursday."},
		}))
		if i == 0 {
			s.convRef = ref
		}
		for day := 29; day >= 0; day-- { // oldest first: each update moves only the rows just made
			for n := range (day*(i+2))%5 + 1 {
				_, _, err := st.Settle(ctx, s.workspace.ID, &store.Charge{AmountNanoUSD: int64(2_000_000 * (n + 1) * (i + 1)), Category: "turn",
					Model: "beta-5.4-mini", ConversationID: &c.ID}, func(int64) []store.NewEvent { return nil })
				require.NoError(t, err)
			}
			_, err := st.Pool().Exec(ctx, `UPDATE ledger SET created_at = now() - make_interval(days => $2)
				WHERE workspace_id = $1 AND created_at > now() - interval '1 minute'`, s.workspace.ID, day)
			require.NoError(t, err)
		}
	}
	resp := call(t, http.MethodPost, s.url+"/v1/webhooks", key, "application/json", `{"url":"http://127.0.0.1:9/hooks","description":"Order system"}`)
	var wh struct{ ID string }
	decode(t, resp, &wh)
	e, err := st.WebhookEndpointByRef(ctx, s.workspace.ID, wh.ID)
	require.NoError(t, err)
	code := 503
	errText := "503 Service Unavailable"
	_, err = st.RecordWebhookAttempt(ctx, store.WebhookAttempt{EndpointID: e.ID, WorkspaceID: s.workspace.ID, EventID: "evt_0000000000000000000001",
		EventType: "turn.completed", Attempt: 1, ResponseCode: &code, Duration: 120 * time.Millisecond, Error: &errText}, 1)
	require.NoError(t, err)

	_, err = st.AppendEvents(ctx, s.workspace.ID, []store.NewEvent{
		{Type: "conversation.created", Data: map[string]any{"conversation_id": s.convRef, "agent": "Order desk", "channel": "webchat"}},
		{Type: "turn.completed", Data: map[string]any{"conversation_id": s.convRef, "status": "open", "usage": map[string]any{"input_tokens": 412, "output_tokens": 38}}},
		{Type: "spend.recorded", Data: map[string]any{"amount_usd": "0.0021", "model": "beta-5.4-mini"}},
	})
	require.NoError(t, err)

	s.shots = os.Getenv("DASHBOARD_SCREENSHOTS")
	if s.shots == "" {
		s.shots = t.TempDir()
	} else if !filepath.IsAbs(s.shots) {
		s.shots = filepath.Join("..", s.shots) // relative to the repository root
	}
	require.NoError(t, os.MkdirAll(s.shots, 0o755))
	return s
}

const agentTemplate = `agent:
  name: %s
  language: en
  persona:
    display_name: Helper
    tone: professional
    greeting: Hi there, how can I help with your order?
  llm:
    provider: beta
    model: beta-5.4-mini
    temperature: 0.5
    max_tokens: 256
    system_prompt: You help customers with their orders.
`

func agentYAML(name string) string { return fmt.Sprintf(agentTemplate, name) }

func call(t *testing.T, method, url, key, contentType, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

func decode(t *testing.T, resp *http.Response, into any) {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Less(t, resp.StatusCode, 300, string(raw))
	require.NoError(t, jsonUnmarshal(raw, into))
}

// browser starts a headless Chromium of its own (its own cookies) for the test, and returns
// a context for its actions, bounded in time.
func browser(t *testing.T) context.Context { return browsertest.Start(t, 0, 0) }

func (s *site) signIn(ctx context.Context, t *testing.T, email string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/dashboard/"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=email]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`#balance`)),
	))
}

var sizes = []struct {
	name          string
	width, height int64
	mobile        bool
}{{"phone", 390, 844, true}, {"desktop", 1280, 900, false}}

// screenshot saves the page at path at both sizes, as NAME-phone.png and NAME-desktop.png.
func (s *site) screenshot(ctx context.Context, t *testing.T, path, name string) {
	t.Helper()
	for _, size := range sizes {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
		if size.mobile {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
		}
		require.NoError(t, chromedp.Do(ctx,
			chromedp.EmulateViewport(size.width, size.height, opts...),
			chromedp.Navigate(s.url+path),
			chromedp.WaitVisible(chromedp.CSS(`main`)),
		))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.Greater(t, len(png), 1000, "%s %s", name, size.name)
		require.NoError(t, os.WriteFile(filepath.Join(s.shots, name+"-"+size.name+".png"), png, 0o644))
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
}

func text(ctx context.Context, t *testing.T, sel string) string {
	t.Helper()
	// Once the document is parsed whole: a page a click has just opened may still be
	// streaming in, its element there and its text cut (TestAuditLogInABrowser's rows).
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.readyState !== 'loading'`))
	require.NoError(t, err)
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return v
}

func jsonUnmarshal(raw []byte, into any) error { return json.Unmarshal(raw, into) }

// TestDashboardInABrowser: an admin signs in, creates a key and calls /v1/models with it,
// revokes it and sees 401, reads a conversation's transcript; a member is refused the keys
// page and sees no admin buttons; every page is photographed at a phone's and a desktop's
// size.
func TestDashboardInABrowser(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := browser(t)

	s.screenshot(ctx, t, "/dashboard/sign-in", "sign-in")
	s.signIn(ctx, t, "admin@acme.example")
	require.Regexp(t, `^\$2[0-4]\.\d\d$`, strings.TrimSpace(text(ctx, t, "#balance")), "$25 of credit less the month's spend")

	// An MCP client's authorization request: the admin approves it on the dashboard, the
	// browser is sent to the client's loopback redirect URI with a code (the page's CSP lets
	// the form's answer go there), and the code buys a token; the keys page lists it.
	s.approveMCPClient(ctx, t)

	// Create a key, use it, revoke it.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/dashboard/keys"),
		chromedp.SendKeys(chromedp.CSS(`input[name=name]`), "Browser test"),
		chromedp.SetValue(chromedp.CSS(`select[name=role]`), "member"),
		chromedp.Submit(chromedp.CSS(`input[name=name]`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-secret`)),
	))
	secret := strings.TrimSpace(text(ctx, t, "#new-secret"))
	require.True(t, strings.HasPrefix(secret, "sk-svc_"), secret)
	resp := call(t, http.MethodGet, s.url+"/v1/models", secret, "", "")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the key made on the page works")
	s.screenshot(ctx, t, "/dashboard/keys", "keys")

	keys, err := s.store.ListKeys(context.Background(), s.workspace.ID)
	require.NoError(t, err)
	var id string
	for _, k := range keys {
		if k.Name == "Browser test" {
			id = k.ID.String()
		}
	}
	require.NotEmpty(t, id)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/dashboard/keys"),
		chromedp.Click(chromedp.CSS(`form[action="/dashboard/keys/`+id+`/revoke"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	))
	require.Contains(t, text(ctx, t, "p.notice"), "is revoked")
	resp = call(t, http.MethodGet, s.url+"/v1/models", secret, "", "")
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the revoked key is refused at once")

	// A conversation's transcript, reached from the list.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/dashboard/conversations"),
		chromedp.Click(chromedp.CSS(`a[href="/dashboard/conversations/`+s.convRef+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`ol.transcript`)),
	))
	require.Contains(t, text(ctx, t, "ol.transcript"), "Order 1234 left our warehouse yesterday")

	for _, p := range []struct{ path, name string }{
		{"/dashboard/", "overview"},
		{"/dashboard/agents", "agents"},
		{"/dashboard/agents/" + s.agentID, "agent"},
		{"/dashboard/conversations", "conversations"},
		{"/dashboard/conversations/" + s.convRef, "transcript"},
		{"/dashboard/webhooks", "webhooks"},
		{"/dashboard/events", "events"},
	} {
		s.screenshot(ctx, t, p.path, p.name)
	}

	// The Events page follows the feed live: an event appears at the top without a reload.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/dashboard/events"),
		chromedp.WaitVisible(chromedp.CSS(`#events-body`)),
		chromedp.WaitVisible(chromedp.CSS(`#events-live[data-live]`)), // the page's EventSource is connected
	))
	_, err = s.store.AppendEvents(context.Background(), s.workspace.ID, []store.NewEvent{{Type: "spend.recorded", Data: map[string]any{"note": "seen live"}}})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#events-body li.fresh`))))
	require.Contains(t, text(ctx, t, "#events-body li.fresh"), `"note":"seen live"`)

	// A member: no keys page, no webhook buttons; refused when trying anyway.
	member := browser(t)
	s.signIn(member, t, "member@acme.example")
	html, err := chromedp.Run(member, chromedp.OuterHTML(chromedp.CSS(`header.top`)))
	require.NoError(t, err)
	require.NotContains(t, html, "/dashboard/keys", "a member sees no Keys link")
	require.NoError(t, chromedp.Do(member, chromedp.Navigate(s.url+"/dashboard/keys"), chromedp.WaitVisible(chromedp.CSS(`p.error`))))
	require.Contains(t, text(member, t, "p.error"), "needs the admin role")
	s.screenshot(member, t, "/dashboard/keys", "member-refused")
	require.NoError(t, chromedp.Do(member, chromedp.Navigate(s.url+"/dashboard/webhooks"), chromedp.WaitVisible(chromedp.CSS(`main h1`))))
	html, err = chromedp.Run(member, chromedp.OuterHTML(chromedp.CSS(`main`)))
	require.NoError(t, err)
	require.NotContains(t, html, "Enable endpoint")
	require.NotContains(t, html, "Redeliver")
}

// approveMCPClient registers an MCP client, has the signed-in browser approve its
// authorization request, and exchanges the code for a token.
func (s *site) approveMCPClient(ctx context.Context, t *testing.T) {
	t.Helper()
	codes := make(chan url.Values, 1)
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case codes <- r.URL.Query():
		default:
		}
		_, _ = io.WriteString(w, "<!doctype html><title>Done</title><main><p id=done>You may close this tab.</p></main>")
	}))
	t.Cleanup(callback.Close)
	redirect := callback.URL + "/callback"
	resp := call(t, http.MethodPost, s.url+"/oauth/register", "", "application/json",
		`{"client_name":"Claude Desktop","redirect_uris":["`+redirect+`"]}`)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	decode(t, resp, &reg)
	verifier := strings.Repeat("verifier-", 6)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {redirect}, "state": {"xyz"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	path := "/dashboard/oauth/authorize?" + q.Encode()
	s.screenshot(ctx, t, path, "oauth-authorize")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.url+path),
		chromedp.Click(chromedp.CSS(`button[value=approve]`)),
		chromedp.WaitVisible(chromedp.CSS(`#done`)),
	))
	got := <-codes
	require.Equal(t, "xyz", got.Get("state"))
	form := url.Values{"grant_type": {"authorization_code"}, "code": {got.Get("code")}, "code_verifier": {verifier},
		"client_id": {reg.ClientID}, "redirect_uri": {redirect}}
	resp = call(t, http.MethodPost, s.url+"/oauth/token", "", "application/x-www-form-urlencoded", form.Encode())
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	decode(t, resp, &tok)
	require.True(t, strings.HasPrefix(tok.AccessToken, "svc_oat_"))
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/dashboard/keys"), chromedp.WaitVisible(chromedp.CSS(`#mcp-authorizations`))))
	require.Contains(t, text(ctx, t, "main"), "Claude Desktop")
}
