// Package server wires the HTTP surfaces: echo, the middleware chain, the error envelope and
// the strict handlers that implement the generated /v1 interface.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	echomw "github.com/oapi-codegen/echo-middleware"

	"switchboard/accounts"
	"switchboard/campaigns"
	"switchboard/catalog"
	"switchboard/channels"
	"switchboard/contacts"
	"switchboard/converse"
	"switchboard/events"
	"switchboard/gen/v1api"
	"switchboard/inbox"
	"switchboard/manage"
	"switchboard/mcp"
	"switchboard/oauth"
	"switchboard/phonenumbers"
	"switchboard/ratelimit"
	"switchboard/recordings"
	"switchboard/responses"
	"switchboard/store"
	"switchboard/webchat"
	"switchboard/workflows"
)

// Config is what the server needs from the environment. It comes complete (see
// app.DefaultConfig and cmd/switchboard's loadConfig): New applies no defaults.
type Config struct {
	Development   bool   // APP_ENV=development
	PublicBaseURL string // PUBLIC_BASE_URL, without a trailing slash
	KeyRPM        int    // RATE_LIMIT_KEY_RPM
	WorkspaceRPM  int    // RATE_LIMIT_WORKSPACE_RPM
	// WebchatVisitorRPM and WebchatDeploymentRPM are the public webchat routes' budgets
	// (WEBCHAT_VISITOR_RPM, WEBCHAT_DEPLOYMENT_RPM; defaults webchat.VisitorRPM and
	// webchat.DeploymentRPM): one visitor's messages, and all of a deployment's visitors'.
	WebchatVisitorRPM    int
	WebchatDeploymentRPM int
	BodyLimitBytes       int64         // larger request bodies are refused with 413
	HealthCheckLimit     time.Duration // how long GET /ready waits for its checks
	SSEPingInterval      time.Duration // SSE_PING_INTERVAL
	// AuthCacheTTL is how long a key's principal is kept in memory (AUTH_CACHE_TTL); zero
	// reads the database on every request. Revocations and suspensions reach the cache at
	// once through LISTEN/NOTIFY (see authCache).
	AuthCacheTTL time.Duration
	// WebchatTokenKey signs the webchat visitor tokens; empty derives it from the store's
	// SECRETS_KEY keyring (webchat.KeyedTokens), or draws a random key per process without one.
	WebchatTokenKey []byte
}

// Deps are the server's collaborators, passed explicitly.
type Deps struct {
	Store     *store.Store
	Catalog   *catalog.Catalog
	Limiter   ratelimit.Limiter
	Responses *responses.Service // the /v1 turn domain
	Hub       *events.Hub        // live event fan-out for GET /v1/events
	Webhooks  *events.Endpoints  // /v1/webhooks: endpoints, URL checks, redeliveries
	Ops       *manage.Service    // agent-management operations (/api, /mcp)
	Agents    *converse.Service  // the deployed-agent runtime (POST /api/agents/{id}/chat)
	MCP       http.Handler       // the MCP tool server
	Log       *slog.Logger
	// Accounts, when set, lets a dashboard session stand for a key on /api (sessionAuth).
	Accounts *accounts.Service
	// Dashboard, when set, serves the dashboard's pages under /dashboard.
	Dashboard http.Handler
	// Contacts, Campaigns and PhoneNumbers serve /api/contacts, /api/campaigns (and the
	// outbound compliance gate) and /api/phone-numbers.
	Contacts     *contacts.Service
	Campaigns    *campaigns.Service
	PhoneNumbers *phonenumbers.Service
	// Channels serves /api/channels and the providers' inbound webhooks under /hooks.
	Channels *channels.Service
	// Recordings serves /api/recordings and the carrier's /media/recordings/{token}.{ext}.
	Recordings *recordings.Service
	// Inbox serves /api/conversations and /api/inbox (the team inbox) and the webchat
	// visitor's stream of people's replies.
	Inbox *inbox.Service
	// Workflows serves /api/workflows and /api/runs.
	Workflows *workflows.Service
	// Actions, when set, parks the destructive bulk calls of /api/bulk/{tool} and confirms
	// them (POST /api/actions/{action_id}/confirm); the turn pipeline is one.
	Actions mcp.Confirmations
	// Ready are the checks of GET /ready beyond the database, which is always checked
	// (migrations, Redis when configured).
	Ready []ReadyCheck
	// Outer middleware runs around every request, right after the request id is set and
	// outside the request logger (metrics, traces). Optional.
	Outer []echo.MiddlewareFunc
	// RateLimited, when set, is told of each refusal by a rate limit and the budget that
	// refused (key, workspace, address).
	RateLimited func(budget string)
	// Pending, when set, is the spend of a workspace's turns that answered and is not yet
	// committed (agent.WriteBehind): the balance and cap checks count it.
	Pending func(workspaceID uuid.UUID) int64
}

// Server holds the wired HTTP surfaces.
type Server struct {
	cfg       Config
	store     *store.Store
	catalog   *catalog.Catalog
	limiter   ratelimit.Limiter
	responses *responses.Service
	hub       *events.Hub
	webhooks  *events.Endpoints
	spends    map[string]bool // the routes of x-spends operations (learnSpends)
	ops       *manage.Service
	agents    *converse.Service
	mcp       http.Handler
	log       *slog.Logger
	echo      *echo.Echo
	accounts  *accounts.Service
	dashboard http.Handler
	ready     *readiness
	outer     []echo.MiddlewareFunc
	limited   func(budget string)
	webchat   *webchat.Service // the rules of the public webchat routes and the test page
	oauth     *oauth.Service   // MCP over OAuth; nil without the dashboard (its login step)
	auth      *authCache       // principals of recently used keys
	pending   func(uuid.UUID) int64
	contacts  *contacts.Service
	campaigns *campaigns.Service
	phones    *phonenumbers.Service
	channels  *channels.Service
	recs      *recordings.Service
	inbox     *inbox.Service
	actions   mcp.Confirmations
	workflows *workflows.Service
}

// New builds the server and its routes.
func New(cfg Config, deps Deps) (*Server, error) {
	s := &Server{cfg: cfg, store: deps.Store, catalog: deps.Catalog, limiter: deps.Limiter, responses: deps.Responses,
		hub: deps.Hub, webhooks: deps.Webhooks, ops: deps.Ops, agents: deps.Agents, mcp: deps.MCP, log: deps.Log, echo: echo.New(),
		accounts: deps.Accounts, dashboard: deps.Dashboard}
	s.outer, s.limited, s.pending = deps.Outer, deps.RateLimited, deps.Pending
	visitors, err := webchat.KeyedTokens(cfg.WebchatTokenKey, deps.Store)
	if err != nil {
		return nil, err
	}
	s.webchat = webchat.NewService(deps.Store, visitors, deps.Agents, cfg.PublicBaseURL)
	if err := checkEmbedContract(); err != nil {
		return nil, err
	}
	if deps.Accounts != nil && deps.Dashboard != nil {
		s.oauth = oauth.New(deps.Store)
	}
	s.auth = newAuthCache(cfg.AuthCacheTTL)
	if cfg.AuthCacheTTL > 0 {
		deps.Store.Watch(s.auth.forget)
		if deps.Hub != nil {
			deps.Hub.OnRevocation(s.auth.forget)
		}
	}
	s.contacts, s.campaigns, s.phones, s.channels = deps.Contacts, deps.Campaigns, deps.PhoneNumbers, deps.Channels
	s.recs = deps.Recordings
	s.actions, s.inbox = deps.Actions, deps.Inbox
	s.workflows = deps.Workflows
	s.ready = &readiness{checks: append([]ReadyCheck{{Name: "database", Check: s.store.Ping}}, deps.Ready...)}
	e := s.echo
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	// Client addresses (per-IP budgets for unauthenticated calls) come from the socket, never
	// from a spoofable X-Forwarded-For.
	e.IPExtractor = echo.ExtractIPDirect()

	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{Generator: newRequestID}))
	e.Use(s.outer...)
	e.Use(s.logRequests())
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, LogLevel: 0, DisablePrintStack: true}))

	if err := s.routePublic(e); err != nil {
		return nil, err
	}
	if err := s.routeV1(e); err != nil {
		return nil, err
	}
	if err := s.routeAPI(e); err != nil {
		return nil, err
	}
	s.routeMCP(e)
	s.routeHooks(e)
	s.routeMedia(e)
	s.routeOAuth(e)
	s.routeDashboard(e)
	return s, nil
}

// routeMCP mounts the MCP tool server at /mcp, behind the same keys, budgets and
// development fallback as /api. The request validator is not involved: MCP has its own.
func (s *Server) routeMCP(e *echo.Echo) {
	if s.mcp == nil {
		return
	}
	e.Any("/mcp", echo.WrapHandler(s.mcp), s.bearerChallenge, s.authenticator(true), s.bodyLimit())
}

// MCPHandler serves only the MCP tool server, for MCP_ADDR: the same middleware, no other
// route.
func (s *Server) MCPHandler() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.IPExtractor = echo.ExtractIPDirect()
	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{Generator: newRequestID}))
	e.Use(s.outer...)
	e.Use(s.logRequests())
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, DisablePrintStack: true}))
	s.routeMCP(e)
	if s.oauth != nil { // the resource's metadata; it names the main server as the authorization server
		e.GET(oauth.ResourceMetadataPath, s.resourceMetadata, s.oauthBudget)
		e.GET(oauth.ResourceMetadataPath+oauth.ResourcePath, s.resourceMetadata, s.oauthBudget)
	}
	e.GET("/health", s.health)
	e.GET("/ready", s.readyz)
	return e
}

// bodyLimit refuses request bodies above the configured limit (413, see tooLarge).
func (s *Server) bodyLimit() echo.MiddlewareFunc {
	return middleware.BodyLimit(strconv.FormatInt(s.cfg.BodyLimitBytes, 10))
}

// Handler is the root HTTP handler.
func (s *Server) Handler() http.Handler { return s.echo }

func (s *Server) routeV1(e *echo.Echo) error {
	spec, err := v1Spec()
	if err != nil {
		return err
	}
	validatorKeeping := func(keep bool) (echo.MiddlewareFunc, error) {
		return requestValidator(spec, &echomw.Options{
			ErrorHandler: validationError,
			Options: openapi3filter.Options{
				AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, // done by s.authenticate
				KeepValidatedValue: keep,
			},
		})
	}
	plain, err := validatorKeeping(false)
	if err != nil {
		return err
	}
	keeping, err := validatorKeeping(true)
	if err != nil {
		return err
	}
	validator := keepValidated(plain, keeping)
	// The body limit comes after authentication so that a 413 carries the rate-limit headers;
	// guardInput before the validator, which must never parse a nesting bomb.
	perms, err := routePermissions(spec)
	if err != nil {
		return err
	}
	if err := s.learnSpends(spec); err != nil {
		return err
	}
	g := e.Group("/v1", s.authenticate, s.endWithKey, authorize(perms), s.bodyLimit(), s.guardInput(spec), validator)
	h := &v1Handlers{s: s}
	v1api.RegisterHandlers(basePath{g: g, prefix: "/v1", post: map[string]func(echo.HandlerFunc) echo.HandlerFunc{
		chatCompletionsPath: h.chatFromValidated, responsesPath: h.responseFromValidated}}, v1api.NewStrictHandler(h, nil))
	return nil
}

// basePath registers the generated routes, whose paths start with /v1, on the /v1 group.
type basePath struct {
	g      *echo.Group
	prefix string
	// post wraps the generated handler of a POST route (by its full path).
	post map[string]func(echo.HandlerFunc) echo.HandlerFunc
}

func (b basePath) path(p string) string { return strings.TrimPrefix(p, b.prefix) }

func (b basePath) CONNECT(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return b.g.CONNECT(b.path(p), h, m...)
}
func (b basePath) DELETE(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return b.g.DELETE(b.path(p), h, m...)
}
func (b basePath) GET(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return b.g.GET(b.path(p), h, m...)
}
func (b basePath) HEAD(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return b.g.HEAD(b.path(p), h, m...)
}
func (b basePath) OPTIONS(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return b.g.OPTIONS(b.path(p), h, m...)
}
func (b basePath) PATCH(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return b.g.PATCH(b.path(p), h, m...)
}
func (b basePath) POST(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	if wrap := b.post[p]; wrap != nil {
		h = wrap(h)
	}
	return b.g.POST(b.path(p), h, m...)
}
func (b basePath) PUT(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return b.g.PUT(b.path(p), h, m...)
}
func (b basePath) TRACE(p string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return b.g.TRACE(b.path(p), h, m...)
}

// Shutdown stops accepting requests and waits for those in flight, until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.echo.Shutdown(ctx) }
