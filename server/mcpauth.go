package server

import (
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"switchboard/apierr"
	"switchboard/oauth"
	"switchboard/store"
)

// MCP over OAuth (package oauth has the protocol). The routes here are the protected
// resource's metadata and the authorization server's machine endpoints; the authorization
// endpoint, where a person signs in and approves, is a dashboard page.
//
// They are not in openapi/api.yaml: they are protocol endpoints whose shapes, errors
// (RFC 6749's `{"error": ...}`, not the platform's envelope) and form-encoded bodies are fixed
// by their RFCs, they need no key and no role (like /health or the webchat routes), and MCP
// clients find them through the metadata documents, not through our OpenAPI. They are
// rate-limited per address with RATE_LIMIT_KEY_RPM, and open to any origin (CORS) since they
// use no cookie: browser-based MCP clients (the MCP Inspector) call them from their page.
//
// Under APP_ENV=development a call to /mcp without an Authorization header still acts as the
// development user (spec rule 3), so no client is ever sent into the flow there; the
// endpoints work all the same, and a bad bearer gets the challenge, for trying the flow.

// routeOAuth mounts the OAuth endpoints when the dashboard (the login step) is served.
func (s *Server) routeOAuth(e *echo.Echo) {
	if s.oauth == nil {
		return
	}
	cors := middleware.CORSWithConfig(middleware.CORSConfig{AllowOrigins: []string{"*"},
		AllowMethods: []string{http.MethodGet, http.MethodPost, http.MethodOptions},
		AllowHeaders: []string{echo.HeaderContentType, echo.HeaderAuthorization, "MCP-Protocol-Version"}})
	mw := []echo.MiddlewareFunc{cors, s.oauthBudget, s.bodyLimit()}
	e.GET(oauth.ResourceMetadataPath, s.resourceMetadata, mw...)
	e.GET(oauth.ResourceMetadataPath+oauth.ResourcePath, s.resourceMetadata, mw...)
	e.GET(oauth.ServerMetadataPath, s.serverMetadata, mw...)
	e.POST(oauth.RegisterPath, s.registerClient, mw...)
	e.POST(oauth.TokenPath, s.token, mw...)
	e.POST(oauth.RevokePath, s.revokeToken, mw...)
	for _, p := range []string{oauth.ResourceMetadataPath, oauth.ResourceMetadataPath + oauth.ResourcePath, oauth.ServerMetadataPath,
		oauth.RegisterPath, oauth.TokenPath, oauth.RevokePath} {
		e.OPTIONS(p, func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }, cors)
	}
}

// oauthBudget spends the caller's per-address budget.
func (s *Server) oauthBudget(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		res, err := s.spend(c.Request().Context(), []budget{{"ip:" + c.RealIP(), s.cfg.KeyRPM}})
		if err != nil {
			return err
		}
		setRateHeaders(c, res)
		if !res.Allowed {
			return oauthError(c, &oauth.Error{Status: http.StatusTooManyRequests, Code: "slow_down",
				Description: "Rate limit exceeded: " + strconv.Itoa(res.Limit) + " requests per minute."})
		}
		c.Response().Header().Set("Cache-Control", "no-store")
		return next(c)
	}
}

// issuer is the authorization server's identifier: PUBLIC_BASE_URL, or when unset the
// address the request came to.
func (s *Server) issuer(r *http.Request) string {
	if s.cfg.PublicBaseURL != "" {
		return s.cfg.PublicBaseURL
	}
	return requestBase(r, "")
}

// resourceBase is the origin of the MCP endpoint the request came to: PUBLIC_BASE_URL when
// the request is for its host, else the request's own host (MCP_ADDR's listener) with
// PUBLIC_BASE_URL's scheme.
func (s *Server) resourceBase(r *http.Request) string {
	if u, err := url.Parse(s.cfg.PublicBaseURL); err == nil && s.cfg.PublicBaseURL != "" {
		if strings.EqualFold(u.Host, r.Host) {
			return s.cfg.PublicBaseURL
		}
		return requestBase(r, u.Scheme)
	}
	return requestBase(r, "")
}

func requestBase(r *http.Request, scheme string) string {
	if scheme == "" {
		scheme = "http"
		if r.TLS != nil {
			scheme = "https"
		}
	}
	return scheme + "://" + r.Host
}

func (s *Server) resourceMetadata(c echo.Context) error {
	r := c.Request()
	return c.JSON(http.StatusOK, oauth.ResourceMetadata(s.resourceBase(r)+oauth.ResourcePath, s.issuer(r)))
}

func (s *Server) serverMetadata(c echo.Context) error {
	return c.JSON(http.StatusOK, oauth.ServerMetadata(s.issuer(c.Request())))
}

func (s *Server) registerClient(c echo.Context) error {
	mt, _, _ := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	if mt != echo.MIMEApplicationJSON {
		return oauthError(c, &oauth.Error{Status: http.StatusBadRequest, Code: "invalid_client_metadata",
			Description: "Send the client metadata as application/json (RFC 7591)."})
	}
	body, err := readBody(c.Request().Body)
	if err != nil {
		return err
	}
	resp, err := s.oauth.Register(c.Request().Context(), body)
	if err != nil {
		return oauthError(c, err)
	}
	return c.JSON(http.StatusCreated, resp)
}

func (s *Server) token(c echo.Context) error {
	form, err := oauthForm(c)
	if err != nil {
		return oauthError(c, err)
	}
	resp, err := s.oauth.Token(c.Request().Context(), form)
	if err != nil {
		return oauthError(c, err)
	}
	c.Response().Header().Set("Pragma", "no-cache")
	return c.JSON(http.StatusOK, resp)
}

func (s *Server) revokeToken(c echo.Context) error {
	form, err := oauthForm(c)
	if err != nil {
		return oauthError(c, err)
	}
	if err := s.oauth.Revoke(c.Request().Context(), form); err != nil {
		return oauthError(c, err)
	}
	return c.NoContent(http.StatusOK)
}

// oauthForm reads a form-encoded body (the token and revocation endpoints take nothing else).
func oauthForm(c echo.Context) (url.Values, error) {
	r := c.Request()
	mt, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	if mt != echo.MIMEApplicationForm {
		return nil, &oauth.Error{Status: http.StatusBadRequest, Code: "invalid_request",
			Description: "Send the parameters as application/x-www-form-urlencoded."}
	}
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, err
		}
		return nil, &oauth.Error{Status: http.StatusBadRequest, Code: "invalid_request", Description: "The form body could not be read."}
	}
	return r.PostForm, nil
}

// oauthError answers an *oauth.Error as RFC 6749 says; any other error goes to the envelope.
func oauthError(c echo.Context, err error) error {
	var e *oauth.Error
	if !errors.As(err, &e) {
		return err
	}
	if e.Status == http.StatusUnauthorized {
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Basic realm="switchboard"`)
	}
	return c.JSON(e.Status, e)
}

// oauthPrincipal is who an OAuth access token sent to /mcp acts as.
func (s *Server) oauthPrincipal(c echo.Context, header string) (store.Principal, error) {
	_, token, _ := strings.Cut(header, " ")
	p, err := s.oauth.Principal(c.Request().Context(), strings.TrimSpace(token))
	var nf *store.NotFoundError
	if errors.As(err, &nf) {
		return store.Principal{}, apierr.Unauthenticated("invalid_token", "The access token is unknown, expired or revoked; refresh it or authorize again.")
	}
	return p, err
}

// isOAuthBearer reports whether a request to /mcp carries an OAuth access token.
func (s *Server) isOAuthBearer(c echo.Context, header string) bool {
	scheme, token, ok := strings.Cut(header, " ")
	return s.oauth != nil && ok && strings.EqualFold(scheme, "Bearer") && c.Path() == oauth.ResourcePath &&
		oauth.IsAccessToken(strings.TrimSpace(token))
}

// bearerChallenge adds `WWW-Authenticate: Bearer` to the 401s of /mcp (RFC 6750 and the MCP
// authorization spec), with resource_metadata (RFC 9728) where the client finds how to get a
// token: MCP clients read a 401 without it as an OAuth flow they cannot start, and report a
// confusing error instead of a bad key.
func (s *Server) bearerChallenge(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if e := apierr.As(err); e != nil && e.Status() == http.StatusUnauthorized {
			challenge := `Bearer realm="switchboard"`
			if s.oauth != nil {
				challenge += `, resource_metadata="` + s.resourceBase(c.Request()) + oauth.ResourceMetadataPath + oauth.ResourcePath + `", scope="` + oauth.Scope + `"`
			}
			if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
				challenge += `, error="invalid_token", error_description="` + quoteSafe.Replace(e.Message) + `"`
			}
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, challenge)
		}
		return err
	}
}

// quoteSafe keeps a message inside a quoted-string of the header.
var quoteSafe = strings.NewReplacer(`"`, "'", `\`, "")
