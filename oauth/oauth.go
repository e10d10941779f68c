// Package oauth is the authorization server of MCP over OAuth (platform spec rule 5; the MCP
// authorization specification): protected-resource metadata (RFC 9728), authorization-server
// metadata (RFC 8414), dynamic client registration (RFC 7591), the authorization code grant
// with PKCE S256 only (OAuth 2.1), refresh with rotation, and token revocation (RFC 7009).
//
// The login step is the dashboard's sign-in: the authorization endpoint is a dashboard page
// (/dashboard/oauth/authorize) that shows the signed-in user what the client asks for and
// sends a code back on approval. Clients are public (no secret: every MCP client is an app on
// the user's machine or a page); PKCE stands for the secret. Redirect URIs must be https,
// http on a loopback address (any port, RFC 8252), or a private-use scheme (`cursor://`).
//
// Tokens are opaque random strings, stored as SHA-256 hashes. An access token (prefix
// svc_oat_) lives AccessTTL and works on /mcp only; it acts as the user who approved it, with
// the user's role and workspace as of each request, so a demoted or deleted user's tokens
// follow at once. Revoking the grant (the dashboard's keys page, or RFC 7009) ends both
// tokens on every replica at once.
//
// Decided where the specifications leave room: one scope, `mcp`, whatever the client asks
// (the user's role is what limits the token); the resource parameter (RFC 8707) is accepted
// and not checked, since the only resource is /mcp.
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"switchboard/store"
)

// Token prefixes: they tell an OAuth token from an API key (sk-svc_) at a glance.
const (
	AccessPrefix  = "svc_oat_"
	RefreshPrefix = "svc_ort_"
	clientPrefix  = "mcpc_"
)

// Paths of the authorization server. AuthorizePath is a dashboard page.
const (
	ResourceMetadataPath = "/.well-known/oauth-protected-resource"
	ServerMetadataPath   = "/.well-known/oauth-authorization-server"
	RegisterPath         = "/oauth/register"
	TokenPath            = "/oauth/token" //nolint:gosec // a path, not a credential
	RevokePath           = "/oauth/revoke"
	AuthorizePath        = "/dashboard/oauth/authorize"
	ResourcePath         = "/mcp"
	Scope                = "mcp"
)

// Lifetimes.
const (
	AccessTTL  = time.Hour
	RefreshTTL = 30 * 24 * time.Hour
	CodeTTL    = 5 * time.Minute
)

// Service issues and checks tokens.
type Service struct{ store *store.Store }

// New is the service over the store.
func New(st *store.Store) *Service { return &Service{store: st} }

// Error is an OAuth error response (RFC 6749 section 5.2): Code is the `error` value.
type Error struct {
	Status      int    `json:"-"`
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Description }

func invalid(code, desc string) *Error { return &Error{Status: 400, Code: code, Description: desc} }

// ResourceMetadata is the protected-resource metadata (RFC 9728) of the MCP endpoint at
// resource, whose authorization server is issuer.
func ResourceMetadata(resource, issuer string) map[string]any {
	return map[string]any{
		"resource":                 resource,
		"resource_name":            "Switchboard MCP",
		"authorization_servers":    []string{issuer},
		"bearer_methods_supported": []string{"header"},
		"scopes_supported":         []string{Scope},
		"resource_documentation":   issuer + "/llms.txt",
	}
}

// ServerMetadata is the authorization-server metadata (RFC 8414) of issuer.
func ServerMetadata(issuer string) map[string]any {
	return map[string]any{
		"issuer":                                         issuer,
		"authorization_endpoint":                         issuer + AuthorizePath,
		"token_endpoint":                                 issuer + TokenPath,
		"registration_endpoint":                          issuer + RegisterPath,
		"revocation_endpoint":                            issuer + RevokePath,
		"scopes_supported":                               []string{Scope},
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"revocation_endpoint_auth_methods_supported":     []string{"none"},
		"code_challenge_methods_supported":               []string{"S256"},
		"authorization_response_iss_parameter_supported": true,
		"service_documentation":                          issuer + "/llms.txt",
	}
}

// Registration is the body of a registration request (RFC 7591), the fields read.
type Registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

// Register registers a public client and answers its registration response.
func (s *Service) Register(ctx context.Context, body []byte) (map[string]any, error) {
	var reg Registration
	if err := json.Unmarshal(body, &reg); err != nil {
		return nil, invalid("invalid_client_metadata", "The body must be a JSON object of client metadata (RFC 7591).")
	}
	if len(reg.RedirectURIs) == 0 || len(reg.RedirectURIs) > 10 {
		return nil, invalid("invalid_redirect_uri", "redirect_uris must list 1 to 10 redirect URIs.")
	}
	for _, u := range reg.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return nil, err
		}
	}
	if m := reg.TokenEndpointAuthMethod; m != "" && m != "none" {
		// A client asking for a secret gets none: every client here is public and uses PKCE.
		reg.TokenEndpointAuthMethod = "none"
	}
	for _, g := range reg.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, invalid("invalid_client_metadata", "grant_types may hold authorization_code and refresh_token only.")
		}
	}
	for _, rt := range reg.ResponseTypes {
		if rt != "code" {
			return nil, invalid("invalid_client_metadata", "response_types may hold code only.")
		}
	}
	name := strings.TrimSpace(reg.ClientName)
	if strings.ContainsFunc(name, unicode.IsControl) {
		return nil, invalid("invalid_client_metadata", "client_name may not contain control characters.")
	}
	if len([]rune(name)) > 100 {
		return nil, invalid("invalid_client_metadata", "client_name may have at most 100 characters.")
	}
	if name == "" {
		name = "Unnamed MCP client"
	}
	id := clientPrefix + randomString(16)
	c, err := s.store.CreateOAuthClient(ctx, id, name, reg.RedirectURIs)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        c.CreatedAt.Unix(),
		"client_name":                c.Name,
		"redirect_uris":              c.RedirectURIs,
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"scope":                      Scope,
	}, nil
}

// checkRedirectURI admits https URIs, http on a loopback address and private-use schemes
// (a native app's `cursor://callback`); never a fragment, never plain http elsewhere.
func checkRedirectURI(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || len(raw) > 2000 {
		return invalid("invalid_redirect_uri", "Each redirect URI must be an absolute URI of at most 2000 characters.")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return invalid("invalid_redirect_uri", "A redirect URI may not have a fragment.")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		if u.Host == "" {
			return invalid("invalid_redirect_uri", "An https redirect URI needs a host.")
		}
	case "http":
		if !isLoopback(u.Hostname()) {
			return invalid("invalid_redirect_uri", "An http redirect URI must point at a loopback address (127.0.0.1, [::1] or localhost); use https elsewhere.")
		}
	case "javascript", "data", "file", "vbscript", "blob", "about":
		return invalid("invalid_redirect_uri", "The redirect URI scheme "+u.Scheme+" is not allowed.")
	default:
		if !strings.Contains(u.Scheme, ".") && len(u.Scheme) < 3 {
			return invalid("invalid_redirect_uri", "A private-use redirect URI scheme needs at least 3 characters.")
		}
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redirectAllowed matches a requested redirect URI against the registered ones: exactly, or
// for a loopback http URI with any port (RFC 8252 section 7.3).
func redirectAllowed(registered []string, requested string) bool {
	req, err := url.Parse(requested)
	if err != nil {
		return false
	}
	for _, r := range registered {
		if r == requested {
			return true
		}
		reg, err := url.Parse(r)
		if err == nil && reg.Scheme == "http" && req.Scheme == "http" && isLoopback(reg.Hostname()) &&
			reg.Hostname() == req.Hostname() && reg.Path == req.Path && reg.RawQuery == req.RawQuery {
			return true
		}
	}
	return false
}

// Request is a checked authorization request.
type Request struct {
	Client        store.OAuthClient
	RedirectURI   string
	State         string
	CodeChallenge string
	Scope         string
	Resource      string
}

// ErrNoRedirect marks an authorization request so broken that no redirect may be made (an
// unknown client or redirect URI): the page shows the error to the user instead.
var ErrNoRedirect = errors.New("the authorization request cannot be answered to the client")

// CheckAuthorize checks an authorization request. An error wrapping ErrNoRedirect is shown to
// the user; any other *Error is sent back to the redirect URI (ErrorRedirect).
func (s *Service) CheckAuthorize(ctx context.Context, q url.Values) (Request, error) {
	clientID := q.Get("client_id")
	if clientID == "" {
		return Request{}, noRedirect("The request names no client (client_id).")
	}
	c, err := s.store.OAuthClientByID(ctx, clientID)
	var nf *store.NotFoundError
	if errors.As(err, &nf) {
		return Request{}, noRedirect("The client is not registered here; have it register again.")
	}
	if err != nil {
		return Request{}, err
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" {
		if len(c.RedirectURIs) != 1 {
			return Request{}, noRedirect("The request names no redirect_uri and the client registered several.")
		}
		redirect = c.RedirectURIs[0]
	}
	if !redirectAllowed(c.RedirectURIs, redirect) {
		return Request{}, noRedirect("The redirect_uri is not one the client registered.")
	}
	r := Request{Client: c, RedirectURI: redirect, State: q.Get("state"), CodeChallenge: q.Get("code_challenge"),
		Scope: Scope, Resource: q.Get("resource")}
	if q.Get("response_type") != "code" {
		return r, invalid("unsupported_response_type", "Only response_type=code is supported.")
	}
	if q.Get("code_challenge_method") != "S256" || !validChallenge(r.CodeChallenge) {
		return r, invalid("invalid_request", "PKCE is required: send code_challenge (43 characters) with code_challenge_method=S256.")
	}
	return r, nil
}

func noRedirect(msg string) error { return errors.Join(ErrNoRedirect, errors.New(msg)) }

func validChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil
}

// ErrorRedirect is where to send the user agent when a request is refused or denied.
func ErrorRedirect(r Request, issuer string, e *Error) string {
	v := url.Values{"error": {e.Code}}
	if e.Description != "" {
		v.Set("error_description", e.Description)
	}
	return withQuery(r, issuer, v)
}

// Approve issues a code for the user of p and answers where to send the user agent.
func (s *Service) Approve(ctx context.Context, r Request, p store.Principal, issuer string) (string, error) {
	if p.UserID == uuid.Nil {
		return "", errors.New("oauth: approving needs a signed-in user")
	}
	code := randomString(32)
	sum := sha256.Sum256([]byte(code))
	if err := s.store.CreateOAuthCode(ctx, sum[:], store.OAuthCode{WorkspaceID: p.WorkspaceID, UserID: p.UserID, ClientID: r.Client.ID,
		RedirectURI: r.RedirectURI, CodeChallenge: r.CodeChallenge, ExpiresAt: time.Now().Add(CodeTTL)}); err != nil {
		return "", err
	}
	return withQuery(r, issuer, url.Values{"code": {code}}), nil
}

func withQuery(r Request, issuer string, v url.Values) string {
	if r.State != "" {
		v.Set("state", r.State)
	}
	v.Set("iss", issuer)
	u, _ := url.Parse(r.RedirectURI)
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TokenResponse is a successful token response.
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// Token answers a token request (form fields of RFC 6749 section 4.1.3 and 6).
func (s *Service) Token(ctx context.Context, form url.Values) (TokenResponse, error) {
	clientID := form.Get("client_id")
	if clientID == "" {
		return TokenResponse{}, &Error{Status: 401, Code: "invalid_client", Description: "client_id is required (public clients send it in the form)."}
	}
	if _, err := s.store.OAuthClientByID(ctx, clientID); err != nil {
		var nf *store.NotFoundError
		if errors.As(err, &nf) {
			return TokenResponse{}, &Error{Status: 401, Code: "invalid_client", Description: "The client is not registered here."}
		}
		return TokenResponse{}, err
	}
	switch form.Get("grant_type") {
	case "authorization_code":
		return s.exchange(ctx, clientID, form)
	case "refresh_token":
		return s.refresh(ctx, clientID, form)
	case "":
		return TokenResponse{}, invalid("invalid_request", "grant_type is required.")
	default:
		return TokenResponse{}, invalid("unsupported_grant_type", "grant_type must be authorization_code or refresh_token.")
	}
}

var errBadGrant = invalid("invalid_grant", "The code is unknown, used, expired, or was issued to another client or redirect URI, or the code_verifier does not match.")

func (s *Service) exchange(ctx context.Context, clientID string, form url.Values) (TokenResponse, error) {
	code, verifier := form.Get("code"), form.Get("code_verifier")
	if code == "" {
		return TokenResponse{}, invalid("invalid_request", "code is required.")
	}
	if !validVerifier(verifier) {
		return TokenResponse{}, invalid("invalid_request", "code_verifier is required: 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (PKCE).")
	}
	sum := sha256.Sum256([]byte(code))
	c, err := s.store.TakeOAuthCode(ctx, sum[:])
	var nf *store.NotFoundError
	if errors.As(err, &nf) {
		return TokenResponse{}, errBadGrant
	}
	if err != nil {
		return TokenResponse{}, err
	}
	challenge := sha256.Sum256([]byte(verifier))
	if c.ClientID != clientID || time.Now().After(c.ExpiresAt) ||
		(form.Get("redirect_uri") != "" && form.Get("redirect_uri") != c.RedirectURI) ||
		subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(challenge[:])), []byte(c.CodeChallenge)) != 1 {
		return TokenResponse{}, errBadGrant
	}
	resp, t := newTokens()
	if _, err := s.store.CreateOAuthGrant(ctx, c.WorkspaceID, c.UserID, clientID, t); err != nil {
		return TokenResponse{}, err
	}
	return resp, nil
}

func (s *Service) refresh(ctx context.Context, clientID string, form url.Values) (TokenResponse, error) {
	old := form.Get("refresh_token")
	if old == "" {
		return TokenResponse{}, invalid("invalid_request", "refresh_token is required.")
	}
	sum := sha256.Sum256([]byte(old))
	resp, t := newTokens()
	err := s.store.RefreshOAuthGrant(ctx, sum[:], clientID, t)
	var nf *store.NotFoundError
	if errors.As(err, &nf) {
		return TokenResponse{}, invalid("invalid_grant", "The refresh token is unknown, used, expired or revoked; authorize again.")
	}
	return resp, err
}

// Revoke revokes the grant of the token (RFC 7009); unknown tokens are no error.
func (s *Service) Revoke(ctx context.Context, form url.Values) error {
	token := form.Get("token")
	if token == "" {
		return invalid("invalid_request", "token is required.")
	}
	sum := sha256.Sum256([]byte(token))
	return s.store.RevokeOAuthToken(ctx, sum[:], form.Get("client_id"))
}

// Principal is who an access token acts as; a *store.NotFoundError for one that is unknown,
// expired or revoked.
func (s *Service) Principal(ctx context.Context, token string) (store.Principal, error) {
	sum := sha256.Sum256([]byte(token))
	return s.store.OAuthPrincipal(ctx, sum[:])
}

// IsAccessToken reports whether a bearer credential is an OAuth access token (not a key).
func IsAccessToken(token string) bool { return strings.HasPrefix(token, AccessPrefix) }

func newTokens() (TokenResponse, store.OAuthTokens) {
	access, refresh := AccessPrefix+randomString(32), RefreshPrefix+randomString(32)
	as, rs := sha256.Sum256([]byte(access)), sha256.Sum256([]byte(refresh))
	now := time.Now()
	return TokenResponse{AccessToken: access, TokenType: "Bearer", ExpiresIn: int(AccessTTL.Seconds()), RefreshToken: refresh, Scope: Scope},
		store.OAuthTokens{AccessSHA256: as[:], RefreshSHA256: rs[:], AccessExpires: now.Add(AccessTTL), RefreshExpires: now.Add(RefreshTTL)}
}

func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for _, r := range v {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' || r == '~') {
			return false
		}
	}
	return true
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
