package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/ratelimit"
)

// A panic in a handler becomes a 500 envelope with hint and docs_url, never the panic text,
// and the log line for it carries the request id.
func TestPanicIsA500WithoutInternals(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s, err := New(Config{PublicBaseURL: "http://sb.test"}, Deps{Catalog: catalog.Default(), Limiter: ratelimit.NewMemory(nil), Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	require.NoError(t, err)
	s.echo.GET("/boom", func(echo.Context) error { panic("secret database password in a panic") })

	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/boom", nil))
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	body, _ := io.ReadAll(rec.Body)
	require.NotContains(t, string(body), "secret")
	var env struct{ Error envelopeError }
	require.NoError(t, json.Unmarshal(body, &env))
	require.Equal(t, "server_error", env.Error.Type)
	require.NotEmpty(t, env.Error.Hint)
	require.Equal(t, "http://sb.test/docs/errors#server_error", env.Error.DocsURL)
	id := rec.Header().Get("X-Request-Id")
	require.NotEmpty(t, id)
	require.Contains(t, logs.String(), id)
	require.Contains(t, logs.String(), "secret database password", "the internals go to the log")
}

// failingBody fails mid-read the way a client that stops sending does.
type failingBody struct{ sent bool }

func (f *failingBody) Read(p []byte) (int, error) {
	if !f.sent {
		f.sent = true
		return copy(p, `{"input":"hel`), nil
	}
	return 0, &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv6loopback, Port: 51786},
		Addr: &net.TCPAddr{IP: net.IPv6loopback, Port: 34433}, Err: os.ErrDeadlineExceeded}
}

func (*failingBody) Close() error { return nil }

// A body whose read fails is a 400 that names neither address nor port, whichever
// middleware reads it first (the input guard of /v1, the raw-body keeper of /api).
func TestUnreadBodyIsA400WithoutNetworkDetail(t *testing.T) {
	t.Parallel()
	s, err := New(Config{PublicBaseURL: "http://sb.test", BodyLimitBytes: 1 << 20}, Deps{Catalog: catalog.Default(), Limiter: ratelimit.NewMemory(nil), Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	s.echo.POST("/read", func(c echo.Context) error { return guardBody(c, func(echo.Context) error { return nil }) })
	s.echo.POST("/keep", keepRawBody(func(echo.Context) error { return nil }))
	for _, path := range []string{"/read", "/keep"} {
		req := httptest.NewRequest(http.MethodPost, path, nil)
		req.Header.Set("Content-Type", "application/json")
		req.Body = &failingBody{}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		require.Equal(t, http.StatusBadRequest, rec.Code, path)
		require.Contains(t, rec.Body.String(), "body_not_received", path)
		require.NotContains(t, rec.Body.String(), "51786", path)
		require.NotContains(t, rec.Body.String(), "::1", path)
	}
}

// Every request writes one access log line with its request id, route, status, timing and
// size, at level INFO, without the caller's source.
func TestEveryRequestWritesOneAccessLogLine(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s, err := New(Config{PublicBaseURL: "http://sb.test"}, Deps{Catalog: catalog.Default(), Limiter: ratelimit.NewMemory(nil), Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	require.NoError(t, err)
	s.echo.GET("/hello", func(c echo.Context) error { return c.String(http.StatusTeapot, "short and stout") })

	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/hello?q=1", nil)
	req.RemoteAddr = "192.0.2.7:4321"
	s.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusTeapot, rec.Code)

	lines := bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n"))
	require.Len(t, lines, 1, logs.String())
	var line map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &line))
	require.Equal(t, "INFO", line["level"])
	require.Equal(t, "request", line["msg"])
	require.Equal(t, rec.Header().Get("X-Request-Id"), line["request_id"])
	require.Equal(t, "GET", line["method"])
	require.Equal(t, "/hello", line["path"])
	require.EqualValues(t, http.StatusTeapot, line["status"])
	require.EqualValues(t, len("short and stout"), line["bytes"])
	require.Equal(t, "192.0.2.7", line["remote_ip"])
	require.Contains(t, line, "latency_ms")
	require.Contains(t, line, "time")
	require.NotContains(t, line, "source")
}
