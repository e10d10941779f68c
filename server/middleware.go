package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"switchboard/apierr"
	"switchboard/apikey"
	"switchboard/inputguard"
	"switchboard/mcp"
	"switchboard/quota"
	"switchboard/ratelimit"
	"switchboard/store"
)

type ctxKey int

const (
	principalKey ctxKey = iota
)

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "req_" + hex.EncodeToString(b)
}

func requestID(c echo.Context) string { return c.Response().Header().Get(echo.HeaderXRequestID) }

// logRequests writes one structured line per request, with its request id.
func (s *Server) logRequests() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogMethod: true, LogURIPath: true, LogStatus: true, LogLatency: true, LogRequestID: true,
		LogResponseSize: true, LogRemoteIP: true, HandleError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			attrs := []slog.Attr{
				slog.String("request_id", v.RequestID),
				slog.String("method", v.Method),
				slog.String("path", v.URIPath),
				slog.Int("status", v.Status),
				slog.Float64("latency_ms", float64(v.Latency.Microseconds())/1000),
				slog.Int64("bytes", v.ResponseSize),
				slog.String("remote_ip", v.RemoteIP),
			}
			if p, ok := principalFrom(c.Request().Context()); ok {
				attrs = append(attrs, slog.String("workspace_id", p.WorkspaceID.String()), slog.String("key_id", p.KeyID.String()))
			}
			s.log.LogAttrs(c.Request().Context(), slog.LevelInfo, "request", attrs...)
			return nil
		},
	})
}

// authenticate resolves the bearer key, spends the request budgets, and refuses workspaces
// that may not work. The budgets are spent before the key is judged, so a caller without a
// valid key is limited per address and every answer, 401 included, carries the X-RateLimit
// headers.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return s.authenticator(false)(next)
}

// authenticator is authenticate; with devFallback (the /api and /mcp surfaces), a call
// without an Authorization header in APP_ENV=development acts as the development user, the
// owner of workspace `default`. Production never does.
func (s *Server) authenticator(devFallback bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { return s.authenticateRequest(c, next, devFallback) }
	}
}

func (s *Server) authenticateRequest(c echo.Context, next echo.HandlerFunc, devFallback bool) error {
	ctx := c.Request().Context()
	if _, ok := principalFrom(ctx); ok {
		return next(c) // a dashboard session authenticated the request (sessionAuth)
	}
	header := c.Request().Header.Get(echo.HeaderAuthorization)
	var p store.Principal
	var authErr error
	if header == "" && devFallback && s.cfg.Development {
		p, authErr = s.developmentUser(ctx)
	} else if s.isOAuthBearer(c, header) {
		p, authErr = s.oauthPrincipal(c, header) // MCP over OAuth: access tokens work on /mcp only
	} else {
		p, authErr = s.principal(ctx, header)
	}
	var buckets []budget
	if authErr != nil {
		if apierr.As(authErr) == nil {
			return authErr // the database is down: a 503 database_unavailable (classify), not a 401
		}
		buckets = []budget{{"ip:" + c.RealIP(), s.cfg.KeyRPM}}
	} else {
		buckets = []budget{{"key:" + p.KeyID.String(), s.cfg.KeyRPM}, {"ws:" + p.WorkspaceID.String(), s.cfg.WorkspaceRPM}}
	}
	res, err := s.spend(ctx, buckets)
	if err != nil {
		return err
	}
	setRateHeaders(c, res)
	if !res.Allowed {
		if s.limited != nil {
			s.limited(refusingBudget(buckets, res))
		}
		return &apierr.Error{Kind: apierr.KindRateLimited, Code: "rate_limit_exceeded",
			Message: "Rate limit exceeded: " + strconv.Itoa(res.Limit) + " requests per minute."}
	}
	if authErr != nil {
		return authErr
	}
	if s.pending != nil {
		// This process's spend that answered but is not committed yet (write-behind) counts.
		spent := s.pending(p.WorkspaceID)
		p.BalanceNanoUSD -= spent
		p.MonthSpendNanoUSD += spent
	}
	if err := s.mayWork(c, p); err != nil {
		return err
	}
	c.SetRequest(c.Request().WithContext(withPrincipal(ctx, p)))
	return next(c)
}

// DevelopmentWorkspace is the workspace of the development user.
const DevelopmentWorkspace = "default"

func (s *Server) developmentUser(ctx context.Context) (store.Principal, error) {
	w, err := s.store.WorkspaceByName(ctx, DevelopmentWorkspace)
	if errors.Is(err, store.ErrNotFound) {
		return store.Principal{}, apierr.Unauthenticated("missing_api_key", "No API key was sent and the development workspace does not exist.")
	}
	if err != nil {
		return store.Principal{}, err
	}
	return store.Principal{Role: "owner", WorkspaceID: w.ID, WorkspaceName: w.Name, WorkspaceState: w.Status, BalanceNanoUSD: w.BalanceNanoUSD,
		MonthlyCapNanoUSD: w.MonthlyCapNanoUSD, MonthSpendNanoUSD: w.MonthSpendNanoUSD}, nil
}

type budget struct {
	key       string
	perMinute int
}

// spend takes one request from each budget and reports the tightest; a refused budget stops
// the walk so the later ones are not charged for a request that will not run.
func (s *Server) spend(ctx context.Context, buckets []budget) (ratelimit.Result, error) {
	var tightest ratelimit.Result
	for i, b := range buckets {
		r, err := s.limiter.Take(ctx, b.key, b.perMinute)
		if err != nil {
			return r, err
		}
		if i == 0 || !r.Allowed || r.Remaining < tightest.Remaining {
			tightest = r
		}
		if !r.Allowed {
			break
		}
	}
	return tightest, nil
}

// refusingBudget names the kind of budget that refused (spend stops at it): key, workspace
// or address. Only a label: never the key or address itself.
func refusingBudget(buckets []budget, res ratelimit.Result) string {
	names := map[string]string{"key": "key", "ws": "workspace", "ip": "address"}
	for _, b := range buckets {
		if b.perMinute == res.Limit {
			prefix, _, _ := strings.Cut(b.key, ":")
			return names[prefix]
		}
	}
	return "unknown"
}

func setRateHeaders(c echo.Context, r ratelimit.Result) {
	h := c.Response().Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(r.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(r.Remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(ceilSeconds(r.Reset)))
	if !r.Allowed {
		h.Set("Retry-After", strconv.Itoa(max(1, ceilSeconds(r.RetryAfter))))
	}
}

func ceilSeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

func (s *Server) principal(ctx context.Context, header string) (store.Principal, error) {
	if header == "" {
		return store.Principal{}, apierr.Unauthenticated("missing_api_key", "No API key was sent. Send it as `Authorization: Bearer sk-svc_...`.")
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return store.Principal{}, apierr.Unauthenticated("invalid_authorization_header", "The Authorization header must be `Bearer <API key>`.")
	}
	sum, err := apikey.Hash(strings.TrimSpace(token))
	if err != nil {
		return store.Principal{}, apierr.Unauthenticated("invalid_api_key", "The API key is malformed: keys start with `sk-svc_`.")
	}
	p, err := s.auth.lookup(ctx, sum, s.store.Authenticate)
	if errors.Is(err, store.ErrNotFound) {
		return store.Principal{}, apierr.Unauthenticated("invalid_api_key", "The API key is unknown or has been revoked.")
	}
	return p, err
}

// mayWork refuses, with 403 insufficient_quota, a call the workspace may not make now
// (quota.Check): any call of a suspended workspace or one without credit, and a spending
// call (x-spends) at the monthly cap. The cap's spend is the counter that each charge moves
// with the balance (store.Tx.Settle), read with the key, so the check costs no query. As
// with the balance, the turn that crosses the cap completes; the next one is refused.
func (s *Server) mayWork(c echo.Context, p store.Principal) error {
	return quotaError(quota.Check(quota.OfPrincipal(p), s.spends[c.Request().Method+" "+c.Path()], time.Now()))
}

// quotaError is the HTTP error of a refusal; nil when there is none.
func quotaError(r *quota.Refused) error {
	if r == nil {
		return nil
	}
	e := apierr.Quota("%s", r.Message)
	e.Hint = r.Hint
	return e
}

// withPrincipal is ctx carrying the authenticated principal, and the actor the audit log
// records its changes under (store.WithAuditActor).
func withPrincipal(ctx context.Context, p store.Principal) context.Context {
	return store.WithAuditActor(context.WithValue(ctx, principalKey, p), store.ActorOf(p))
}

func principalFrom(ctx context.Context) (store.Principal, bool) {
	p, ok := ctx.Value(principalKey).(store.Principal)
	return p, ok
}

// MCPCaller is the workspace and role of the authenticated caller of a request.
func MCPCaller(ctx context.Context) (mcp.Caller, bool) {
	p, ok := principalFrom(ctx)
	return mcp.Caller{WorkspaceID: p.WorkspaceID, Role: p.Access()}, ok
}

// guardInput refuses, before the request validator parses anything, what no operation
// accepts (inputguard): a JSON body nested deeper than inputguard.MaxDepth, and text
// PostgreSQL refuses: NUL characters, and (in paths and queries, which are not decoded as
// JSON is) bytes that are not UTF-8. Such a path parameter is a 404 (no id holds one); a
// query parameter the operation declares, or a JSON value, a 400 naming it. Query
// parameters no operation declares are ignored here as everywhere else.
func (s *Server) guardInput(spec *openapi3.T) echo.MiddlewareFunc {
	declared := declaredQuery(spec)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			for i, name := range c.ParamNames() {
				// `*` is the catch-all of an unknown route, which answers its own 404.
				if name != "*" && i < len(c.ParamValues()) && !pathValueStorable(c.ParamValues()[i]) {
					return noSuchID(c.Path(), name)
				}
			}
			for name := range declared[c.Request().Method+" "+c.Path()] {
				for _, v := range c.QueryParams()[name] {
					if err := inputguard.CheckText(name, v); err != nil {
						return err
					}
				}
			}
			return guardBody(c, next)
		}
	}
}

// pathValueStorable reports whether a path parameter is text PostgreSQL accepts. When the
// path came escaped (RawPath: `%2C` in an id), echo hands over the escaped value and the
// generated binder unescapes it, so both forms are checked.
func pathValueStorable(v string) bool {
	if inputguard.CheckText("", v) != nil {
		return false
	}
	unescaped, err := url.PathUnescape(v)
	return err != nil || inputguard.CheckText("", unescaped) == nil
}

// declaredQuery lists the query parameters of each operation of spec, by echo route
// ("GET /v1/webhooks/:id/attempts").
func declaredQuery(spec *openapi3.T) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for path, item := range spec.Paths.Map() {
		route := strings.NewReplacer("{", ":", "}", "").Replace(path)
		for method, op := range item.Operations() {
			names := map[string]bool{}
			for _, params := range []openapi3.Parameters{item.Parameters, op.Parameters} {
				for _, p := range params {
					if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
						names[p.Value.Name] = true
					}
				}
			}
			out[method+" "+route] = names
		}
	}
	return out
}

// guardBody checks a JSON body (or one without a Content-Type; the validator judges it).
func guardBody(c echo.Context, next echo.HandlerFunc) error {
	req := c.Request()
	if req.Body == nil || req.Body == http.NoBody || !isJSON(req.Header.Get(echo.HeaderContentType)) {
		return next(c)
	}
	raw, err := readBody(req.Body)
	if err != nil {
		return err // over the body limit (the 413), or not received
	}
	if err := inputguard.CheckJSON(raw); err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(raw))
	return next(c)
}

// isJSON reports whether a Content-Type is JSON, or absent (the validator then decides).
func isJSON(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	mediaType = strings.ToLower(strings.TrimSpace(mediaType))
	return mediaType == "" || strings.HasSuffix(mediaType, "json")
}

// noSuchID is the 404 of a path id that cannot exist, coded as the route's resource is when
// its id is unknown: `/v1/webhooks/:id/attempts` gives webhook_not_found.
func noSuchID(route, param string) *apierr.Error {
	what := "resource"
	segments := strings.Split(route, "/")
	for i, seg := range segments {
		if seg == ":"+param && i > 0 {
			what = strings.TrimSuffix(segments[i-1], "s")
			break
		}
	}
	return apierr.NotFound(param, what+"_not_found", "No %s with that id in this workspace.", what)
}
