package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/catalog"
	"switchboard/openapi"
	"switchboard/openapi/contract"
	"switchboard/ratelimit"
	"switchboard/server"
	"switchboard/store"
	"switchboard/store/storetest"
)

// testBundle is one server on its own database, with a workspace and a key.
type testBundle struct {
	url       string
	store     *store.Store
	client    *http.Client // validates every response against openapi/v1.yaml
	workspace store.Workspace
	key       string
}

type setupOpts struct {
	keyRPM, workspaceRPM int
}

func setup(t *testing.T, opts ...func(*setupOpts)) *testBundle {
	t.Helper()
	o := setupOpts{keyRPM: 1000, workspaceRPM: 1000}
	for _, f := range opts {
		f(&o)
	}
	st := storetest.New(t)
	srv, err := server.New(server.Config{
		PublicBaseURL: "http://switchboard.test",
		KeyRPM:        o.keyRPM,
		WorkspaceRPM:  o.workspaceRPM,
	}, server.Deps{Store: st, Catalog: catalog.Default(), Limiter: ratelimit.NewMemory(nil), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	b := &testBundle{url: ts.URL, store: st, client: contract.Load(t, openapi.V1YAML).Client(t)}
	b.workspace, err = st.CreateWorkspace(context.Background(), "acme", 5_000_000_000)
	require.NoError(t, err)
	b.key = b.newKey(t, b.workspace, "member")
	return b
}

func (b *testBundle) newKey(t *testing.T, w store.Workspace, role string) string {
	t.Helper()
	key, sum, display := apikey.New()
	_, err := b.store.CreateKey(context.Background(), w.ID, role, sum, display)
	require.NoError(t, err)
	return key
}

// do sends a request with the given Authorization value ("" sends none) and returns the
// response with its body read.
func (b *testBundle) do(t *testing.T, method, path, auth, body string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.url+path, r)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, raw
}

func (b *testBundle) get(t *testing.T, path string) (*http.Response, []byte) {
	t.Helper()
	return b.do(t, http.MethodGet, path, "Bearer "+b.key, "")
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	Hint    string  `json:"hint"`
	DocsURL string  `json:"docs_url"`
}

// errorOf decodes the envelope and checks its status.
func errorOf(t *testing.T, resp *http.Response, body []byte, status int) apiError {
	t.Helper()
	require.Equal(t, status, resp.StatusCode, string(body))
	var env struct {
		Error apiError `json:"error"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	require.NoError(t, dec.Decode(&env), string(body))
	require.NotEmpty(t, env.Error.Message)
	require.NotEmpty(t, env.Error.Type)
	return env.Error
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}
