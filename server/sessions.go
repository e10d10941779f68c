package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"switchboard/access"
	"switchboard/apierr"
)

// sessionAuth lets a dashboard session stand for a key on /api: a request without an
// Authorization header but with a live session cookie acts as the signed-in user, with the
// user's role, under the user's own request budget and the workspace's. A state-changing
// request so authenticated must come from the dashboard's own origin (cross-origin
// protection); a bearer key needs none, since a browser never sends one by itself. With an
// Authorization header the key decides and the cookie is ignored.
func (s *Server) sessionAuth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if s.accounts == nil || r.Header.Get(echo.HeaderAuthorization) != "" {
			return next(c)
		}
		p, ok, err := s.accounts.RequestPrincipal(r)
		if err != nil {
			return err
		}
		if !ok {
			return next(c)
		}
		if err := s.accounts.CheckCrossOrigin(r); err != nil {
			return &apierr.Error{Kind: apierr.KindPermission, Code: "cross_origin_request",
				Message: "A request signed in by a dashboard session must come from the dashboard's own site."}
		}
		res, err := s.spend(r.Context(), []budget{{"user:" + p.UserID.String(), s.cfg.KeyRPM}, {"ws:" + p.WorkspaceID.String(), s.cfg.WorkspaceRPM}})
		if err != nil {
			return err
		}
		setRateHeaders(c, res)
		if !res.Allowed {
			return &apierr.Error{Kind: apierr.KindRateLimited, Code: "rate_limit_exceeded",
				Message: "Rate limit exceeded: " + strconv.Itoa(res.Limit) + " requests per minute."}
		}
		if err := s.mayWork(c, p); err != nil {
			return err
		}
		c.SetRequest(r.WithContext(withPrincipal(r.Context(), p)))
		return next(c)
	}
}

// routeDashboard mounts the dashboard's pages; / leads to them.
func (s *Server) routeDashboard(e *echo.Echo) {
	if s.dashboard == nil {
		return
	}
	h := echo.WrapHandler(s.dashboard)
	e.GET("/dashboard/events/stream", s.dashboardEvents, s.sessionAuth)
	e.Any("/dashboard", h, s.bodyLimit())
	e.Any("/dashboard/*", h, s.bodyLimit())
	e.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusSeeOther, "/dashboard/") })
}

// dashboardEvents is the event feed of GET /v1/events for the dashboard's Events page, signed
// in by the session cookie (sessionAuth; the read permission, as /v1/events): the events
// after `after` (or Last-Event-ID, when the browser reconnects), then live ones, each sent as
// `event: message`. Without a session it answers 401.
func (s *Server) dashboardEvents(c echo.Context) error {
	ctx := c.Request().Context()
	p, ok := principalFrom(ctx)
	if !ok || p.UserID == uuid.Nil {
		return apierr.Unauthenticated("not_signed_in", "Sign in to the dashboard to follow the event feed.")
	}
	if err := access.Check(p.Access(), access.Read, "Following the event feed"); err != nil {
		return err
	}
	var cursor int64
	for _, v := range []string{c.Request().Header.Get("Last-Event-ID"), c.QueryParam("after")} {
		if v = strings.TrimSpace(v); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return apierr.Invalid("after", "invalid_parameter", "after must be a cursor: a non-negative integer.")
			}
			cursor = n
			break
		}
	}
	f := &eventFeed{ctx: ctx, store: s.store, hub: s.hub, ping: s.cfg.SSEPingInterval, workspace: p.WorkspaceID, cursor: cursor, generic: true}
	return f.VisitStreamEventsResponse(c.Response())
}
