package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// endWithKey lets the hub end a request's stream when its key is revoked or its workspace
// suspended (events.Hub.Track), on every replica. The request's context gets a cancel
// function; the request is registered once it turns out to be a stream (its response starts
// as text/event-stream: the events feed, streamed responses and chat completions), so that
// ordinary requests in flight run to their end as they would have. Streams end as when the
// client leaves: the feed returns, a turn is cancelled.
func (s *Server) endWithKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, ok := principalFrom(c.Request().Context())
		if !ok || p.KeyID == uuid.Nil {
			return next(c)
		}
		ctx, cancel := context.WithCancel(c.Request().Context())
		defer cancel()
		w := &streamWatch{ResponseWriter: c.Response().Writer, track: func() func() {
			return s.hub.Track(p.KeyID, p.WorkspaceID, cancel)
		}}
		defer w.untrack()
		c.Response().Writer = w
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

// streamWatch registers its request with the hub when the response starts as an event
// stream.
type streamWatch struct {
	http.ResponseWriter
	track   func() (untrack func())
	stop    func()
	started bool
}

func (w *streamWatch) WriteHeader(code int) {
	if !w.started {
		w.started = true
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			w.stop = w.track()
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *streamWatch) Write(b []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *streamWatch) untrack() {
	if w.stop != nil {
		w.stop()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer (Flush).
func (w *streamWatch) Unwrap() http.ResponseWriter { return w.ResponseWriter }
