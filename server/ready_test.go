package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadinessChecksDependenciesAndDrains: /ready checks the database and the migrations,
// and answers 503 `draining` once the process is draining while other routes still serve.
func TestReadinessChecksDependenciesAndDrains(t *testing.T) {
	t.Parallel()
	b := setup(t)

	resp, body := b.do(t, http.MethodGet, "/ready", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.JSONEq(t, `{"status":"ok","database":"ok","migrations":"ok"}`, string(body))

	b.app.Server.BeginDrain()
	resp, body = b.do(t, http.MethodGet, "/ready", "", "")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.JSONEq(t, `{"status":"draining"}`, string(body))

	resp, _ = b.do(t, http.MethodGet, "/health", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "still alive")
	resp, body = b.do(t, http.MethodGet, "/v1/models", "Bearer "+b.key, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "still serving: %s", body)
}

// TestReadinessFailsWithoutTheDatabase: a replica whose database is gone is unready, not dead.
func TestReadinessFailsWithoutTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.store.Close()

	resp, body := b.do(t, http.MethodGet, "/ready", "", "")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, string(body), `"database":"unavailable"`)
	resp, _ = b.do(t, http.MethodGet, "/health", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "liveness does not depend on the database")
}
