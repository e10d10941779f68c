package server

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/labstack/echo/v4"
)

// ReadyCheck is one dependency that GET /ready looks at: the database, its migrations, Redis.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
	// Degrades marks a dependency the replica serves without (Redis: the rate limits fail
	// open): its failure is reported, `"status":"degraded"`, but the answer stays 200, so
	// losing it does not take every replica out of the load balancer at once.
	Degrades bool
}

// readiness is what GET /ready answers from.
type readiness struct {
	checks   []ReadyCheck
	draining atomic.Bool
}

// BeginDrain makes GET /ready answer 503 `draining` from now on, while every other route keeps
// serving: a load balancer that polls /ready stops sending new requests before the process
// stops accepting them (see serve's DRAIN_DELAY).
func (s *Server) BeginDrain() { s.ready.draining.Store(true) }

// Draining reports whether BeginDrain was called.
func (s *Server) Draining() bool { return s.ready.draining.Load() }

// health is liveness: the process answers HTTP. It looks at nothing else, so that a lost
// database makes replicas unready (GET /ready), never restarted.
func (s *Server) health(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is readiness: 200 when every check passes within HealthCheckLimit, else 503 naming
// each check's state (`ok`, `unavailable`), except that a failed check that only degrades
// keeps 200 with status `degraded`; 503 `draining` once BeginDrain was called.
func (s *Server) readyz(c echo.Context) error {
	if s.ready.draining.Load() {
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "draining"})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.cfg.HealthCheckLimit)
	defer cancel()
	out := map[string]string{}
	status, state := http.StatusOK, "ok"
	for _, ch := range s.ready.checks {
		if err := ch.Check(ctx); err != nil {
			s.log.WarnContext(ctx, "not ready", "check", ch.Name, "error", err.Error())
			out[ch.Name] = "unavailable"
			if ch.Degrades {
				if state == "ok" {
					state = "degraded"
				}
				continue
			}
			status, state = http.StatusServiceUnavailable, "unavailable"
			continue
		}
		out[ch.Name] = "ok"
	}
	out["status"] = state
	return c.JSON(status, out)
}
