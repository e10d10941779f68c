package app_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/responses"
	"switchboard/server"
	"switchboard/store"
	"switchboard/store/storetest"
)

type testBundle struct {
	app       *app.App
	store     *store.Store
	vendor    *llmtest.Fake // the alpha family, which serves the default model
	workspace store.Workspace
}

// setup wires a process over its own database; change adjusts the configuration, which
// starts from app.DefaultConfig like the binary's. The process is not started.
func setup(t *testing.T, change func(*app.Config)) *testBundle {
	t.Helper()
	st := storetest.New(t)
	fake := llmtest.NewAnthropic(t)
	cfg := app.DefaultConfig()
	cfg.Families = map[string]llm.FamilyConfig{"alpha": {Protocol: fake.Protocol(), BaseURL: fake.URL, APIKey: "k"}}
	if change != nil {
		change(&cfg)
	}
	a, err := app.New(cfg, st, catalog.Default(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	ws, err := st.CreateWorkspace(context.Background(), "acme", 5_000_000_000)
	require.NoError(t, err)
	return &testBundle{app: a, store: st, vendor: fake, workspace: ws}
}

// start runs the process until the test ends.
func (b *testBundle) start(t *testing.T) {
	t.Helper()
	require.NoError(t, b.app.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, b.app.Stop(ctx))
	})
}

func (b *testBundle) status(t *testing.T, id string) string {
	t.Helper()
	raw, err := b.app.Responses.Get(context.Background(), b.workspace.ID, id)
	require.NoError(t, err)
	var r struct{ Status string }
	require.NoError(t, json.Unmarshal(raw, &r))
	return r.Status
}

func (b *testBundle) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), query).Scan(&n))
	return n
}

func (b *testBundle) queue(t *testing.T, text string) string {
	t.Helper()
	created, err := b.app.Responses.Create(context.Background(), responses.CreateRequest{WorkspaceID: b.workspace.ID,
		Input: responses.TurnInput{Text: text}, Store: true, Background: true})
	require.NoError(t, err)
	return created.Response.Id
}

// TestQueuedResponsesAreWorkedOnceStarted: the insert-only client queues, the working
// client (built after the pipeline) runs the job.
func TestQueuedResponsesAreWorkedOnceStarted(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	id := b.queue(t, "work")
	require.Equal(t, "queued", b.status(t, id), "nothing works jobs before Start")
	b.start(t)
	require.Eventually(t, func() bool { return b.status(t, id) == "completed" }, 30*time.Second, 20*time.Millisecond)
	require.Len(t, b.vendor.Requests(), 1)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM events WHERE type = 'meta_response.completed'`))
}

// TestSweeperFailsStuckResponsesOnStart: a response left unfinished past its TTL (its job
// lost with a replica) is failed and announced by the sweeper Start runs.
func TestSweeperFailsStuckResponsesOnStart(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *app.Config) { c.Responses.TTL = 200 * time.Millisecond })
	_, err := b.store.Pool().Exec(context.Background(),
		`INSERT INTO responses (workspace_id, short_id, status, model, background, created_at, body)
		 VALUES ($1, 'resp_stuck0000000000000000', 'queued', 'beta-5.4', true, now() - interval '1 hour',
		   '{"id":"resp_stuck0000000000000000","object":"response","created_at":1,"status":"queued","model":"beta-5.4","output":[]}')`,
		b.workspace.ID)
	require.NoError(t, err)
	b.start(t)
	require.Eventually(t, func() bool { return b.status(t, "resp_stuck0000000000000000") == "failed" }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM events WHERE type = 'meta_response.completed'`))
}

// TestStopWithAnEndedContextCancelsRunningTurns: a drain that ran out of time cancels the
// turn in flight; it commits nothing and is left for a rescue.
func TestStopWithAnEndedContextCancelsRunningTurns(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.vendor.Push(llmtest.Reply{Text: "never", Delay: time.Hour})
	require.NoError(t, b.app.Start(context.Background()))
	id := b.queue(t, "long")
	require.Eventually(t, func() bool { return len(b.vendor.Requests()) == 1 }, 30*time.Second, 20*time.Millisecond, "the turn is in flight")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, b.app.Stop(ended))
	require.Equal(t, "in_progress", b.status(t, id))
	require.Zero(t, b.count(t, `SELECT count(*) FROM ledger`))
}

func TestDevelopmentStartEnsuresTheDefaultWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *app.Config) {
		c.Server.Development = true
		c.DevelopmentCreditNanoUSD = 7_000_000_000
	})
	b.start(t)
	w, err := b.store.WorkspaceByName(context.Background(), server.DevelopmentWorkspace)
	require.NoError(t, err)
	require.Equal(t, int64(7_000_000_000), w.BalanceNanoUSD)

	dev := app.DefaultConfig()
	dev.Server.Development = true
	again, err := app.New(dev, b.store, catalog.Default(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.NoError(t, again.Start(context.Background()), "an existing default workspace is fine")
	require.NoError(t, again.Stop(context.Background()))
}

// TestHandlerServesTheWiredSurfaces: the handler answers health and the /v1 routes.
func TestHandlerServesTheWiredSurfaces(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ts := httptest.NewServer(b.app.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = http.Get(ts.URL + "/v1/models")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "/v1 is behind keys")
}

// TestStartSealsPlaintextWebhookSecrets: the secret of an endpoint stored before secrets
// were sealed is sealed with SECRETS_KEY when the process starts.
func TestStartSealsPlaintextWebhookSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	_, err := b.store.Pool().Exec(context.Background(), `INSERT INTO webhook_endpoints (workspace_id, short_id, url, event_types, secret)
		VALUES ($1, 'whe-old0000000000000000', 'https://hooks.example.com/old', '{*}', 'whsec_b2xkIHNlY3JldCBvZiBhbiBvbGQgZW5kcG9pbnQ=')`, b.workspace.ID)
	require.NoError(t, err)
	b.start(t)
	require.Zero(t, b.count(t, `SELECT count(*) FROM webhook_endpoints WHERE secret IS NOT NULL OR secret_ciphertext IS NULL`))
	e, err := b.store.WebhookEndpointByRef(context.Background(), b.workspace.ID, "whe-old0000000000000000")
	require.NoError(t, err)
	require.Equal(t, "whsec_b2xkIHNlY3JldCBvZiBhbiBvbGQgZW5kcG9pbnQ=", e.Secret)
}
