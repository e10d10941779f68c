package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
