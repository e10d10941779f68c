package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"
)

// oauthWorld reaches the test server under its public name, http://switchboard.test (the
// issuer and resource of its metadata), with a cookie jar and redirects not followed.
type oauthWorld struct {
	b      *testBundle
	client *http.Client // no cookies: what an MCP client uses
	person *http.Client // a browser: cookies, redirects not followed
}

const publicBase = "http://switchboard.test"

func newOAuthWorld(t *testing.T, b *testBundle) *oauthWorld {
	t.Helper()
	target := strings.TrimPrefix(b.url, "http://")
	d := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == "switchboard.test:80" {
			addr = target
		}
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &oauthWorld{b: b, client: &http.Client{Transport: tr},
		person: &http.Client{Transport: tr, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// personClient is a browser signed in as email (a user with testPassword) at publicBase.
func (w *oauthWorld) personClient(t *testing.T, email string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Transport: w.client.Transport, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(publicBase+"/dashboard/sign-in", url.Values{"email": {email}, "password": {testPassword}})
	require.NoError(t, err)
	_ = body(t, resp)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	return c
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return string(raw)
}

// approve plays the person: follows the authorization URL to the sign-in page, signs in,
// comes back, approves, and returns the redirect to the client.
func (w *oauthWorld) approve(t *testing.T, authURL, email, decision string) *url.URL {
	t.Helper()
	resp, err := w.person.Get(authURL)
	require.NoError(t, err)
	_ = body(t, resp)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "/dashboard/sign-in", loc.Path)
	next := loc.Query().Get("next")
	require.True(t, strings.HasPrefix(next, "/dashboard/oauth/authorize?"), next)

	resp, err = w.person.PostForm(publicBase+"/dashboard/sign-in", url.Values{"email": {email}, "password": {testPassword}, "next": {next}})
	require.NoError(t, err)
	_ = body(t, resp)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, next, resp.Header.Get("Location"), "back to the authorization page after signing in")

	resp, err = w.person.Get(publicBase + next)
	require.NoError(t, err)
	page := body(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "Authorize Test MCP client")
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "form-action 'self' http://127.0.0.1:49152;")
	form := url.Values{"decision": {decision}}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`).FindAllStringSubmatch(page, -1) {
		form.Set(m[1], htmlUnescape(m[2]))
	}
	resp, err = w.person.PostForm(publicBase+"/dashboard/oauth/authorize", form)
	require.NoError(t, err)
	_ = body(t, resp)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	to, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:49152", to.Host)
	require.Equal(t, publicBase, to.Query().Get("iss"))
	return to
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&#43;", "+", "&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">").Replace(s)
}

// TestMCPOverOAuth: mcp-go's OAuth client discovers the authorization server from the 401,
// registers, sends the person through the dashboard's sign-in and approval, exchanges the
// code with PKCE and lists the tools; the authorization shows on the keys page, and once
// revoked there its token is refused. Bearer keys keep working beside it.
func TestMCPOverOAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newOAuthWorld(t, b)
	ctx := context.Background()
	email := "oauth-member@example.com"
	b.newUser(t, b.workspace, email, "member")

	tokens := mcpclient.NewMemoryTokenStore()
	cfg := mcpclient.OAuthConfig{RedirectURI: "http://127.0.0.1:49152/callback", PKCEEnabled: true, TokenStore: tokens, HTTPClient: w.client}
	c, err := mcpclient.NewOAuthStreamableHttpClient(b.url+"/mcp", cfg, transport.WithHTTPBasicClient(w.client))
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "switchboard-tests", Version: "1"}
	_, err = c.Initialize(ctx, init)
	require.True(t, mcpclient.IsOAuthAuthorizationRequiredError(err), "%v", err)

	h := mcpclient.GetOAuthHandler(err)
	require.NoError(t, h.RegisterClient(ctx, "Test MCP client"))
	verifier, err := mcpclient.GenerateCodeVerifier()
	require.NoError(t, err)
	state, err := mcpclient.GenerateState()
	require.NoError(t, err)
	authURL, err := h.GetAuthorizationURL(ctx, state, mcpclient.GenerateCodeChallenge(verifier))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(authURL, publicBase+"/dashboard/oauth/authorize?"), authURL)

	to := w.approve(t, authURL, email, "approve")
	require.Equal(t, state, to.Query().Get("state"))
	require.NoError(t, h.ProcessAuthorizationResponse(ctx, to.Query().Get("code"), state, verifier))

	_, err = c.Initialize(ctx, init)
	require.NoError(t, err)
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	require.NoError(t, err)
	require.NotEmpty(t, tools.Tools)

	tok, err := tokens.GetToken(ctx)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(tok.AccessToken, "svc_oat_"))
	require.NotEmpty(t, tok.RefreshToken)

	// The token is for /mcp only: /v1 and /api take keys.
	resp, raw := b.do(t, http.MethodGet, "/v1/models", tok.AccessToken, "")
	errorOf(t, resp, raw, http.StatusUnauthorized)

	// The member sees it on the Settings page; another member may not revoke it.
	member := w.personClient(t, email)
	resp, err = member.Get(publicBase + "/dashboard/settings")
	require.NoError(t, err)
	require.Contains(t, body(t, resp), "Test MCP client")
	grants, err := b.store.ListOAuthGrants(ctx, b.workspace.ID)
	require.NoError(t, err)
	require.Len(t, grants, 1)
	other := b.signedIn(t, "member")
	resp, err = other.client.PostForm(b.url+"/dashboard/settings/oauth/"+grants[0].ID.String()+"/revoke", url.Values{})
	require.NoError(t, err)
	_ = body(t, resp)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	// The keys page lists the authorization; an admin revokes it there.
	admin := b.signedIn(t, "admin")
	resp, err = admin.client.Get(b.url + "/dashboard/keys")
	require.NoError(t, err)
	page := body(t, resp)
	require.Contains(t, page, "Test MCP client")
	require.Contains(t, page, email)
	resp, err = admin.client.PostForm(b.url+"/dashboard/keys/oauth/"+grants[0].ID.String()+"/revoke", url.Values{})
	require.NoError(t, err)
	_ = body(t, resp)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	_, err = c.ListTools(ctx, mcp.ListToolsRequest{})
	require.Error(t, err, "a revoked token is refused")
	resp = mcpPost(t, w, "Bearer "+tok.AccessToken)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`)
	// Its refresh token is dead too.
	tr := w.tokenRequest(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {h.GetClientID()}})
	require.Equal(t, http.StatusBadRequest, tr.status)
	require.Equal(t, "invalid_grant", tr.body["error"])

	// A bearer key works as before.
	resp = mcpPost(t, w, "Bearer "+b.key)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func mcpPost(t *testing.T, w *oauthWorld, auth string) *http.Response {
	t.Helper()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	// /mcp at its loopback address: the MCP server refuses another Host on a loopback
	// connection (DNS-rebinding protection); its metadata then names that address.
	req, err := http.NewRequest(http.MethodPost, w.b.url+"/mcp", strings.NewReader(initialize))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := w.client.Do(req)
	require.NoError(t, err)
	_ = body(t, resp)
	return resp
}

type tokenAnswer struct {
	status int
	body   map[string]any
}

func (w *oauthWorld) tokenRequest(t *testing.T, form url.Values) tokenAnswer {
	t.Helper()
	resp, err := w.client.PostForm(publicBase+"/oauth/token", form)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(body(t, resp)), &out))
	return tokenAnswer{resp.StatusCode, out}
}

func (w *oauthWorld) register(t *testing.T, payload string) (int, map[string]any) {
	t.Helper()
	resp, err := w.client.Post(publicBase+"/oauth/register", "application/json", strings.NewReader(payload))
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(body(t, resp)), &out))
	return resp.StatusCode, out
}

// TestOAuthEndpoints: the metadata documents, and what the endpoints refuse: redirect URIs
// that could leak a code, requests without PKCE, a wrong verifier, a code used twice, and a
// denial; a refresh rotates both tokens.
func TestOAuthEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := newOAuthWorld(t, b)
	getJSON := func(path string) map[string]any {
		req, err := http.NewRequest(http.MethodGet, publicBase+path, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "http://localhost:6274") // the MCP Inspector's page
		resp, err := w.client.Do(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(body(t, resp)), &out))
		return out
	}
	prm := getJSON("/.well-known/oauth-protected-resource/mcp")
	require.Equal(t, publicBase+"/mcp", prm["resource"])
	require.Equal(t, []any{publicBase}, prm["authorization_servers"])
	require.Equal(t, prm, getJSON("/.well-known/oauth-protected-resource"))
	as := getJSON("/.well-known/oauth-authorization-server")
	require.Equal(t, publicBase, as["issuer"])
	require.Equal(t, publicBase+"/dashboard/oauth/authorize", as["authorization_endpoint"])
	require.Equal(t, []any{"S256"}, as["code_challenge_methods_supported"])

	for _, bad := range []string{
		`{"redirect_uris":["http://evil.example/cb"]}`,
		`{"redirect_uris":["javascript:alert(1)"]}`,
		`{"redirect_uris":["https://app.example/cb#frag"]}`,
		`{"redirect_uris":[]}`,
		`not json`,
	} {
		status, out := w.register(t, bad)
		require.Equal(t, http.StatusBadRequest, status, bad)
		require.Contains(t, []any{"invalid_redirect_uri", "invalid_client_metadata"}, out["error"], bad)
	}
	status, reg := w.register(t, `{"client_name":"Test MCP client","redirect_uris":["http://127.0.0.1:49152/callback","cursor://oauth/cb"],"token_endpoint_auth_method":"client_secret_basic"}`)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, "none", reg["token_endpoint_auth_method"])
	clientID := reg["client_id"].(string)

	email := "oauth-viewer@example.com"
	b.newUser(t, b.workspace, email, "viewer")
	verifier := strings.Repeat("v", 50)
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	authorize := func(q url.Values) string { return publicBase + "/dashboard/oauth/authorize?" + q.Encode() }
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {"http://127.0.0.1:49152/callback"},
		"state": {"s1"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}

	// An unregistered redirect URI is shown to the person, never redirected to.
	bad := url.Values{}
	for k, v := range q {
		bad[k] = v
	}
	bad.Set("redirect_uri", "https://evil.example/cb")
	resp, err := w.person.Get(authorize(bad))
	require.NoError(t, err)
	_ = body(t, resp)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode) // to the sign-in first
	resp, err = w.person.PostForm(publicBase+"/dashboard/sign-in", url.Values{"email": {email}, "password": {testPassword}})
	require.NoError(t, err)
	_ = body(t, resp)
	resp, err = w.person.Get(authorize(bad))
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body(t, resp), "not one the client registered")

	// Without PKCE the refusal goes back to the client.
	noPKCE := url.Values{}
	for k, v := range q {
		noPKCE[k] = v
	}
	noPKCE.Del("code_challenge")
	resp, err = w.person.Get(authorize(noPKCE))
	require.NoError(t, err)
	_ = body(t, resp)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "invalid_request", loc.Query().Get("error"))
	require.Equal(t, "s1", loc.Query().Get("state"))

	// Denied.
	deny := q
	resp, err = w.person.PostForm(publicBase+"/dashboard/oauth/authorize", withDecision(deny, "deny"))
	require.NoError(t, err)
	_ = body(t, resp)
	loc, err = url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "access_denied", loc.Query().Get("error"))

	// Approved: a wrong verifier spends the code; a right one on a fresh code works once.
	code := func() string {
		resp, err := w.person.PostForm(publicBase+"/dashboard/oauth/authorize", withDecision(q, "approve"))
		require.NoError(t, err)
		_ = body(t, resp)
		loc, err := url.Parse(resp.Header.Get("Location"))
		require.NoError(t, err)
		require.NotEmpty(t, loc.Query().Get("code"))
		return loc.Query().Get("code")
	}
	exchange := func(code, verifier string) tokenAnswer {
		return w.tokenRequest(t, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
			"client_id": {clientID}, "redirect_uri": {"http://127.0.0.1:49152/callback"}})
	}
	c1 := code()
	a := exchange(c1, strings.Repeat("w", 50))
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "invalid_grant", a.body["error"])
	require.Equal(t, "invalid_grant", exchange(c1, verifier).body["error"], "a code is spent by a failed exchange")
	require.Equal(t, "invalid_request", exchange(code(), "short").body["error"])
	c2 := code()
	a = exchange(c2, verifier)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, "Bearer", a.body["token_type"])
	require.Equal(t, "invalid_grant", exchange(c2, verifier).body["error"], "a code works once")
	require.Equal(t, "invalid_client", w.tokenRequest(t, url.Values{"grant_type": {"authorization_code"}, "client_id": {"mcpc_nope"}}).body["error"])

	// The token acts as the viewer: reading works.
	resp = mcpPost(t, w, "Bearer "+a.body["access_token"].(string))
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Refresh rotates both tokens; the old refresh token is then refused.
	r := w.tokenRequest(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {a.body["refresh_token"].(string)}, "client_id": {clientID}})
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.NotEqual(t, a.body["access_token"], r.body["access_token"])
	resp = mcpPost(t, w, "Bearer "+a.body["access_token"].(string))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "the old access token ends with the refresh")
	require.Equal(t, "invalid_grant", w.tokenRequest(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {a.body["refresh_token"].(string)}, "client_id": {clientID}}).body["error"])

	// The viewer (no keys permission) revokes their own authorization on the Settings page;
	// the client revokes again (RFC 7009), which is no error.
	grants, err := b.store.ListOAuthGrants(context.Background(), b.workspace.ID)
	require.NoError(t, err)
	require.Len(t, grants, 1)
	resp, err = w.person.PostForm(publicBase+"/dashboard/settings/oauth/"+grants[0].ID.String()+"/revoke", url.Values{})
	require.NoError(t, err)
	_ = body(t, resp)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/dashboard/settings#mcp-clients", resp.Header.Get("Location"))
	resp = mcpPost(t, w, "Bearer "+r.body["access_token"].(string))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, err = w.client.PostForm(publicBase+"/oauth/revoke", url.Values{"token": {r.body["refresh_token"].(string)}, "client_id": {clientID}})
	require.NoError(t, err)
	_ = body(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp = mcpPost(t, w, "Bearer "+r.body["access_token"].(string))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func withDecision(q url.Values, decision string) url.Values {
	f := url.Values{"decision": {decision}}
	for k, v := range q {
		f[k] = v
	}
	return f
}

// FuzzOAuth sends mutated bodies to the OAuth endpoints (which are not in the OpenAPI
// documents, so FuzzHTTP does not reach them): registration (JSON) and the token and
// revocation endpoints (forms). No answer may be a 5xx, and every refusal is an RFC 6749
// error object. To fuzz:
//
//	scripts/with-test-db.sh go test -run '^$' -fuzz FuzzOAuth -fuzztime 2m ./server/
func FuzzOAuth(f *testing.F) {
	f.Add(uint8(0), []byte(`{"client_name":"Fuzz","redirect_uris":["http://127.0.0.1:9/cb"]}`))
	f.Add(uint8(0), []byte(`{"redirect_uris":["cursor://cb"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`))
	f.Add(uint8(1), []byte("grant_type=authorization_code&code=abc&code_verifier="+strings.Repeat("v", 43)+"&client_id=$client&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb"))
	f.Add(uint8(1), []byte("grant_type=refresh_token&refresh_token=svc_ort_x&client_id=$client"))
	f.Add(uint8(2), []byte("token=svc_oat_x&client_id=$client"))
	b := setup(f, func(o *setupOpts) { o.keyRPM, o.workspaceRPM = 1<<30, 1<<30 })
	resp, err := http.Post(b.url+"/oauth/register", "application/json", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:9/cb"]}`))
	require.NoError(f, err)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	require.NoError(f, json.Unmarshal(readAll(f, resp), &reg))
	endpoints := []struct{ path, contentType string }{
		{"/oauth/register", "application/json"},
		{"/oauth/token", "application/x-www-form-urlencoded"},
		{"/oauth/revoke", "application/x-www-form-urlencoded"},
	}
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		e := endpoints[int(which)%len(endpoints)]
		body := strings.ReplaceAll(string(payload), "$client", reg.ClientID)
		resp, err := http.Post(b.url+e.path, e.contentType, strings.NewReader(body))
		require.NoError(t, err)
		raw := readAll(t, resp)
		require.Less(t, resp.StatusCode, 500, string(raw))
		if resp.StatusCode >= 400 && resp.StatusCode != http.StatusRequestEntityTooLarge {
			var out struct {
				Error string `json:"error"`
			}
			require.NoError(t, json.Unmarshal(raw, &out), string(raw))
			require.NotEmpty(t, out.Error, string(raw))
		}
	})
}
