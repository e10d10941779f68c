package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/accounts"
	"switchboard/apikey"
	"switchboard/openapi"
	"switchboard/openapi/contract"
	"switchboard/store"
)

// browser is a signed-in dashboard session: a cookie jar, redirects not followed, every
// /api answer checked against the contract.
type browser struct {
	b      *testBundle
	client *http.Client
	email  string
}

const testPassword = "correct horse battery staple"

// newUser makes a user of the workspace with a password, straight in the store.
func (b *testBundle) newUser(t testing.TB, w store.Workspace, email, role string) store.User {
	t.Helper()
	ctx := context.Background()
	sum := sha256.Sum256([]byte(email))
	u, err := b.store.CreateUser(ctx, w.ID, email, role, sum[:], timeNowPlusHour())
	require.NoError(t, err)
	hash, err := accounts.HashPassword(testPassword)
	require.NoError(t, err)
	u, err = b.store.SetPassword(ctx, w.ID, u.ID, hash)
	require.NoError(t, err)
	return u
}

// newBrowser is a client with a cookie jar and no session yet.
func (b *testBundle) newBrowser(t testing.TB) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := contract.Client(t, contract.Load(t, openapi.V1YAML), contract.Load(t, openapi.APIYAML))
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{b: b, client: c}
}

// signedIn makes a user of the role in the bundle's workspace and signs it in.
func (b *testBundle) signedIn(t testing.TB, role string) *browser {
	t.Helper()
	email := role + "-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "@example.com"
	if _, err := b.store.UserByEmail(context.Background(), email); err != nil {
		b.newUser(t, b.workspace, email, role)
	}
	br := b.newBrowser(t)
	resp := br.signIn(t, email, testPassword)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	br.email = email
	return br
}

func (br *browser) signIn(t testing.TB, email, password string) *http.Response {
	t.Helper()
	resp, err := br.client.PostForm(br.b.url+"/dashboard/sign-in", url.Values{"email": {email}, "password": {password}})
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// do sends a request with the session cookie (and the given extra headers).
func (br *browser) do(t testing.TB, method, path, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, br.b.url+path, r)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := br.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, raw
}

type listedKey struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	Role       string  `json:"role"`
	Prefix     string  `json:"prefix"`
	LastUsedAt *string `json:"last_used_at"`
	RevokedAt  *string `json:"revoked_at"`
}

// TestKeysThroughASession: creating a key needs a dashboard session (a bearer key is
// refused), within the role ladder of the user; listing shows name and last use, never the
// secret; revoking works with a session or a key and stops the key at once.
func TestKeysThroughASession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.signedIn(t, "admin")

	resp, raw := b.do(t, http.MethodPost, "/api/keys", "Bearer "+b.key, `{"role":"viewer","name":"ci"}`)
	e := errorOf(t, resp, raw, http.StatusForbidden)
	require.Equal(t, "session_required", str(e.Code), "a bearer key cannot mint keys")

	resp, raw = admin.do(t, http.MethodPost, "/api/keys", `{"role":"member","name":"CI deploys"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var made keyBody
	require.NoError(t, json.Unmarshal(raw, &made))
	require.Regexp(t, `^sk-svc_`, made.Key)
	resp, _ = b.do(t, http.MethodGet, "/v1/models", "Bearer "+made.Key, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "the new key works")

	resp, raw = admin.do(t, http.MethodGet, "/api/keys", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.NotContains(t, string(raw), made.Key, "a list never shows a secret")
	var list struct{ Keys []listedKey }
	require.NoError(t, json.Unmarshal(raw, &list))
	var found *listedKey
	for i := range list.Keys {
		if list.Keys[i].ID == made.ID {
			found = &list.Keys[i]
		}
	}
	require.NotNil(t, found)
	require.Equal(t, "CI deploys", found.Name)
	require.Equal(t, "member", found.Role)
	require.NotNil(t, found.LastUsedAt, "the key was used")

	resp, raw = admin.do(t, http.MethodPost, "/api/keys", `{"role":"admin","name":"peer"}`)
	require.Equal(t, "role_not_allowed", str(errorOf(t, resp, raw, http.StatusForbidden).Code), "an admin cannot mint an admin key")
	owner := b.signedIn(t, "owner")
	resp, raw = owner.do(t, http.MethodPost, "/api/keys", `{"role":"admin","name":"peer"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var peer keyBody
	require.NoError(t, json.Unmarshal(raw, &peer))
	resp, raw = admin.do(t, http.MethodDelete, "/api/keys/"+peer.ID, "")
	require.Equal(t, "role_not_allowed", str(errorOf(t, resp, raw, http.StatusForbidden).Code), "an admin cannot revoke a peer")

	member := b.signedIn(t, "member")
	resp, raw = member.do(t, http.MethodGet, "/api/keys", "")
	require.Equal(t, "role_not_allowed", str(errorOf(t, resp, raw, http.StatusForbidden).Code))
	resp, raw = member.do(t, http.MethodPost, "/api/keys", `{"role":"viewer"}`)
	require.Equal(t, "role_not_allowed", str(errorOf(t, resp, raw, http.StatusForbidden).Code), "a member makes no keys")

	resp, raw = admin.do(t, http.MethodPost, "/api/keys", `{"role":"viewer","name":"`+strings.Repeat("x", 101)+`"}`)
	require.Equal(t, "name", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))

	resp, raw = admin.do(t, http.MethodDelete, "/api/keys/"+made.ID, "", "Sec-Fetch-Site", "cross-site")
	require.Equal(t, "cross_origin_request", str(errorOf(t, resp, raw, http.StatusForbidden).Code), "another site cannot use the session")
	resp, raw = admin.do(t, http.MethodDelete, "/api/keys/"+made.ID, "", "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	resp, _ = b.do(t, http.MethodGet, "/v1/models", "Bearer "+made.Key, "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a revoked key stops working at once")

	resp, raw = b.do(t, http.MethodPost, "/api/keys", "", `{"role":"viewer"}`)
	errorOf(t, resp, raw, http.StatusUnauthorized)
}

// TestSignOutEndsTheSession: signing out ends the session for /api too; signing out
// everywhere ends the user's other sessions, on every replica.
func TestSignOutEndsTheSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	one := b.signedIn(t, "admin")
	two := b.newBrowser(t)
	require.Equal(t, http.StatusSeeOther, two.signIn(t, one.email, testPassword).StatusCode)
	_, other := b.replica(t)

	resp, _ := one.do(t, http.MethodGet, "/api/keys", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = one.do(t, http.MethodPost, "/dashboard/sign-out", "")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = one.do(t, http.MethodGet, "/api/keys", "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "signed out")

	// The second session works on the other replica until it is signed out everywhere.
	twoOnOther := &browser{b: &testBundle{url: other}, client: two.client}
	resp, _ = twoOnOther.do(t, http.MethodGet, "/api/keys", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	three := b.newBrowser(t)
	require.Equal(t, http.StatusSeeOther, three.signIn(t, one.email, testPassword).StatusCode)
	resp, _ = three.do(t, http.MethodPost, "/dashboard/sign-out-everywhere", "")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = twoOnOther.do(t, http.MethodGet, "/api/keys", "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "signed out everywhere, on the other replica too")
}

// TestSignIn: a wrong password and an unknown email look alike; attempts are budgeted;
// pages need a session in production; a set-password link works once.
func TestSignIn(t *testing.T) {
	t.Parallel()
	// A small budget: attempts refill continuously, so on a slow machine (each attempt hashes
	// with argon2id, under -race) a budget of 10 a minute could refill as fast as the loop
	// below spends it.
	b := setup(t, func(o *setupOpts) { o.signInPerMinute = 4 })
	b.newUser(t, b.workspace, "ann@example.com", "viewer")
	br := b.newBrowser(t)
	resp, _ := br.do(t, http.MethodGet, "/dashboard/", "")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/dashboard/sign-in?next=%2Fdashboard%2F", resp.Header.Get("Location"))

	require.Equal(t, http.StatusUnauthorized, br.signIn(t, "ann@example.com", "wrong password!").StatusCode)
	require.Equal(t, http.StatusUnauthorized, br.signIn(t, "nobody@example.com", testPassword).StatusCode)
	require.Equal(t, http.StatusSeeOther, br.signIn(t, "ANN@example.com ", testPassword).StatusCode, "emails are not case-sensitive")
	resp, raw := br.do(t, http.MethodGet, "/dashboard/", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(raw), "ann@example.com")

	limited := false
	for range 12 {
		if br.signIn(t, "target@example.com", "guess").StatusCode == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	require.True(t, limited, "sign-in attempts of one email are budgeted")

	// A set-password link, as `switchboard users create` prints it.
	acc := accounts.New(accounts.Config{PublicBaseURL: b.url}, b.store, nil)
	_, link, err := acc.CreateUser(context.Background(), "acme", "Bob@Example.com", "member")
	require.NoError(t, err)
	u, err := url.Parse(link)
	require.NoError(t, err)
	bob := b.newBrowser(t)
	resp, _ = bob.do(t, http.MethodGet, u.RequestURI(), "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	form := url.Values{"token": {u.Query().Get("token")}, "password": {"short"}, "confirm": {"short"}}
	resp, err = bob.client.PostForm(b.url+accounts.SetPasswordPath, form)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "too short")
	form.Set("password", testPassword)
	form.Set("confirm", testPassword)
	resp, err = bob.client.PostForm(b.url+accounts.SetPasswordPath, form)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = bob.do(t, http.MethodGet, "/dashboard/", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "signed in by setting the password")
	resp, _ = bob.do(t, http.MethodGet, u.RequestURI(), "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the link works once")
	_, _, err = acc.CreateUser(context.Background(), "acme", "bob@example.com", "member")
	require.Error(t, err, "one user per email")
}

// TestDevelopmentUser: under APP_ENV=development the development user is signed in without
// a password, and may create keys without a session cookie; never in production
// (TestSignIn, TestKeysThroughASession).
func TestDevelopmentUser(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.development = true })
	br := b.newBrowser(t)
	resp, raw := br.do(t, http.MethodGet, "/dashboard/", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), accounts.DevelopmentEmail)
	resp, raw = b.do(t, http.MethodPost, "/api/keys", "", `{"role":"admin","name":"dev"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
}

// TestDashboardRefusesByRole: a viewer sees no key or agent buttons and is refused when
// posting by hand; pages answer for every role that may read.
func TestDashboardRefusesByRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	viewer := b.signedIn(t, "viewer")
	for _, page := range []string{"/dashboard/", "/dashboard/agents", "/dashboard/conversations", "/dashboard/webhooks"} {
		resp, raw := viewer.do(t, http.MethodGet, page, "")
		require.Equal(t, http.StatusOK, resp.StatusCode, page+": "+string(raw))
		require.NotContains(t, string(raw), "<button class=\"danger\"", page)
	}
	resp, raw := viewer.do(t, http.MethodGet, "/dashboard/keys", "")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, string(raw), "needs the admin role")
	resp, err := viewer.client.PostForm(b.url+"/dashboard/keys", url.Values{"name": {"x"}, "role": {"viewer"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	admin := b.signedIn(t, "admin")
	resp, err = admin.client.PostForm(b.url+"/dashboard/keys", url.Values{"name": {"from the page"}, "role": {"viewer"}})
	require.NoError(t, err)
	page := readAll(t, resp)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(page))
	secret := regexp.MustCompile(`id="new-secret">(sk-svc_[^<]+)<`).FindStringSubmatch(string(page))
	require.Len(t, secret, 2, "the secret is shown once")
	resp, raw = admin.do(t, http.MethodGet, "/dashboard/keys", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(raw), "from the page")
	require.NotContains(t, string(raw), secret[1], "and never again")

	req, err := http.NewRequest(http.MethodPost, b.url+"/dashboard/keys", strings.NewReader("name=x&role=viewer"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	resp, err = admin.client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a form posted from another site is refused")
}

func timeNowPlusHour() time.Time { return time.Now().Add(time.Hour) }

// viaSessionOfKey calls the operation through a dashboard session of the same role as key
// (for operations that need a session, such as creating keys).
func (b *testBundle) viaSessionOfKey(t *testing.T, method, path, key, body string) outcome {
	t.Helper()
	sum, err := apikey.Hash(key)
	require.NoError(t, err)
	p, err := b.store.Authenticate(context.Background(), sum)
	require.NoError(t, err)
	resp, raw := b.signedIn(t, p.Role).do(t, method, path, body)
	got := outcome{status: resp.StatusCode}
	if resp.StatusCode >= 400 {
		got.code = errorOf(t, resp, raw, resp.StatusCode).codeOrEmpty()
	}
	return got
}

// TestDashboardActions: a member enables and disables an agent from its page, a viewer is
// refused; conversations filter by agent and label; an admin re-enables a webhook endpoint.
func TestDashboardActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	resp, raw := b.doYAML(t, "Bearer "+b.key, agentYAML("Front desk"))
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var made struct{ AgentID string }
	require.NoError(t, json.Unmarshal(raw, &made))
	agentID := mustUUID(t, made.AgentID)

	member, viewer := b.signedIn(t, "member"), b.signedIn(t, "viewer")
	resp, raw = viewer.do(t, http.MethodGet, "/dashboard/agents/"+made.AgentID, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, string(raw), "Disable agent", "a viewer sees no button")
	resp, err := viewer.client.PostForm(b.url+"/dashboard/agents/"+made.AgentID+"/status", url.Values{"status": {"disabled"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "and is refused anyway")

	resp, raw = member.do(t, http.MethodGet, "/dashboard/agents/"+made.AgentID, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(raw), "Disable agent")
	resp, err = member.client.PostForm(b.url+"/dashboard/agents/"+made.AgentID+"/status", url.Values{"status": {"disabled"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	a, err := b.store.AgentByID(ctx, b.workspace.ID, agentID)
	require.NoError(t, err)
	require.Equal(t, "disabled", a.Status)
	resp, raw = member.do(t, http.MethodGet, "/dashboard/agents/"+made.AgentID, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(raw), "is now disabled", "the page says what happened")
	require.Contains(t, string(raw), "Enable agent")

	labelled, err := b.store.CreateAgentConversation(ctx, b.workspace.ID, agentID, "webchat", []string{"billing"})
	require.NoError(t, err)
	other, err := b.store.CreateAgentConversation(ctx, b.workspace.ID, agentID, "webchat", []string{"sales"})
	require.NoError(t, err)
	resp, raw = viewer.do(t, http.MethodGet, "/dashboard/conversations?agent="+made.AgentID+"&label=billing", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(raw), labelled)
	require.NotContains(t, string(raw), other)
	texted, err := b.store.CreateAgentConversation(ctx, b.workspace.ID, agentID, "sms", nil)
	require.NoError(t, err)
	resp, raw = viewer.do(t, http.MethodGet, "/dashboard/conversations?channel=sms", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(raw), texted)
	require.NotContains(t, string(raw), labelled)
	resp, raw = viewer.do(t, http.MethodGet, "/dashboard/conversations?status=open&channel=webchat", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(raw), labelled)
	require.Contains(t, string(raw), other)
	require.NotContains(t, string(raw), texted)
	resp, raw = viewer.do(t, http.MethodGet, "/dashboard/conversations?status=escalated", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, string(raw), labelled)
	resp, _ = viewer.do(t, http.MethodGet, "/dashboard/conversations?agent=nope", "")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, _ = viewer.do(t, http.MethodGet, "/dashboard/conversations/mc-doesnotexist", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	resp, raw = b.do(t, http.MethodPost, "/v1/webhooks", "Bearer "+b.key, `{"url":"https://hooks.example.com/in"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var hook struct{ ID string }
	require.NoError(t, json.Unmarshal(raw, &hook))
	off := false
	_, err = b.store.UpdateWebhookEndpoint(ctx, b.workspace.ID, hook.ID, store.WebhookUpdate{Enabled: &off})
	require.NoError(t, err)
	resp, raw = member.do(t, http.MethodGet, "/dashboard/webhooks", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, string(raw), "Enable endpoint", "a member may not manage webhooks")
	admin := b.signedIn(t, "admin")
	resp, err = admin.client.PostForm(b.url+"/dashboard/webhooks/"+hook.ID+"/enable", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	e, err := b.store.WebhookEndpointByRef(ctx, b.workspace.ID, hook.ID)
	require.NoError(t, err)
	require.True(t, e.Enabled)
}
