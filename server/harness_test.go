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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/apikey"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/openapi"
	"switchboard/openapi/contract"
	"switchboard/ratelimit"
	"switchboard/server"
	"switchboard/store"
	"switchboard/store/storetest"
)

// testBundle is one server on its own database, with a workspace and a key, and the three
// vendor families faked at the wire behind the real adapters.
type testBundle struct {
	url       string
	store     *store.Store
	client    *http.Client // validates every response against openapi/v1.yaml
	workspace store.Workspace
	key       string
	vendors   map[catalog.Family]*llmtest.Fake
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
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	vendors := map[catalog.Family]*llmtest.Fake{
		catalog.Alpha: llmtest.NewAnthropic(t),
		catalog.Beta:  llmtest.NewOpenAI(t),
		catalog.Gamma: llmtest.NewGemini(t),
	}
	families := map[string]llm.FamilyConfig{}
	for f, fake := range vendors {
		families[string(f)] = llm.FamilyConfig{Protocol: fake.Protocol(), BaseURL: fake.URL, APIKey: "test-key-" + string(f)}
	}
	models, err := llm.NewRegistry(families, false, nil)
	require.NoError(t, err)
	cat := catalog.Default()
	srv, err := server.New(server.Config{
		PublicBaseURL: "http://switchboard.test",
		KeyRPM:        o.keyRPM,
		WorkspaceRPM:  o.workspaceRPM,
	}, server.Deps{Store: st, Catalog: cat, Limiter: ratelimit.NewMemory(nil), Turns: agent.New(st, cat, models, nil, log), Log: log})
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	b := &testBundle{url: ts.URL, store: st, client: contract.Load(t, openapi.V1YAML).Client(t), vendors: vendors}
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

// openai is the official OpenAI Go client pointed at the server with the given key, through
// the contract-checking transport.
func (b *testBundle) openai(key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(b.url+"/v1"), option.WithAPIKey(key), option.WithHTTPClient(b.client), option.WithMaxRetries(0))
}

// count returns the number of rows of a table in the test database.
func (b *testBundle) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

// balance is the workspace's balance now.
func (b *testBundle) balance(t *testing.T) int64 {
	t.Helper()
	w, err := b.store.WorkspaceByName(context.Background(), b.workspace.Name)
	require.NoError(t, err)
	return w.BalanceNanoUSD
}
