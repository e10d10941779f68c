package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

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
		if err := workspaceMayWork(p); err != nil {
			return err
		}
		if err := withinSpendCap(c, p, time.Now()); err != nil {
			return err
		}
		c.SetRequest(r.WithContext(context.WithValue(r.Context(), principalKey, p)))
		return next(c)
	}
}

// routeDashboard mounts the dashboard's pages; / leads to them.
func (s *Server) routeDashboard(e *echo.Echo) {
	if s.dashboard == nil {
		return
	}
	h := echo.WrapHandler(s.dashboard)
	e.Any("/dashboard", h, s.bodyLimit())
	e.Any("/dashboard/*", h, s.bodyLimit())
	e.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusSeeOther, "/dashboard/") })
}
