package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/app"
	"switchboard/catalog"
	"switchboard/events"
	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/msgapps"
	"switchboard/openapi"
	"switchboard/openapi/contract"
	"switchboard/responses"
	"switchboard/sms"
	"switchboard/sms/smstest"
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
	app       *app.App
	opts      setupOpts
	families  map[string]llm.FamilyConfig
}

type setupOpts struct {
	keyRPM, workspaceRPM int
	allowPrivate         bool // WEBHOOK_ALLOW_PRIVATE
	disableAfter         int
	ping                 time.Duration
	responseTTL          time.Duration
	idempotencyRetention time.Duration
	development          bool             // APP_ENV=development
	bodyLimit            int64            // 0: the default
	clock                func() time.Time // the deployed agents' clock; nil: time.Now
	smtpURL              string           // SMTP_URL
	confirmationTTL      time.Duration    // 0: the default
	signInPerMinute      int              // 0: the default
	// meterFlush is METER_FLUSH_INTERVAL. 0 (here the default): ephemeral turns commit
	// before they answer, so that a test may read the ledger right after a turn.
	meterFlush     time.Duration
	smsBaseURL     string        // TWILIO_BASE_URL of a fake provider (smstest); empty: no SMS provider
	msgappsURL     string        // the messaging apps' APIs, faked (msgappstest): Graph, Instagram (/ig) and Telegram
	campaignPeriod time.Duration // 0: the default (a minute)
	inboxSweep     time.Duration // 0: the default (30 seconds)
	voiceSlowAfter time.Duration // 0: the default (voice.DefaultSlowAfter)
}

func setup(t testing.TB, opts ...func(*setupOpts)) *testBundle {
	t.Helper()
	o := setupOpts{keyRPM: 1000, workspaceRPM: 1000, allowPrivate: true, disableAfter: 15, ping: 15 * time.Second,
		responseTTL: time.Minute, idempotencyRetention: time.Hour}
	for _, f := range opts {
		f(&o)
	}
	st := storetest.New(t)
	vendors := map[catalog.Family]*llmtest.Fake{
		catalog.Alpha: llmtest.NewAnthropic(t),
		catalog.Beta:  llmtest.NewOpenAI(t),
		catalog.Gamma: llmtest.NewGemini(t),
	}
	families := map[string]llm.FamilyConfig{}
	for f, fake := range vendors {
		families[string(f)] = llm.FamilyConfig{Protocol: fake.Protocol(), BaseURL: fake.URL, APIKey: "test-key-" + string(f)}
	}
	a, url := startApp(t, st, o, families)

	b := &testBundle{url: url, store: st, client: contract.Client(t, contract.Load(t, openapi.V1YAML), contract.Load(t, openapi.APIYAML)), vendors: vendors,
		app: a, opts: o, families: families}
	var err error
	b.workspace, err = st.CreateWorkspace(context.Background(), "acme", 5_000_000_000)
	require.NoError(t, err)
	b.key = b.newKey(t, b.workspace, "admin")
	return b
}

func (b *testBundle) newKey(t testing.TB, w store.Workspace, role string) string {
	t.Helper()
	key, sum, display := apikey.New()
	_, err := b.store.CreateKey(context.Background(), w.ID, role, sum, display)
	require.NoError(t, err)
	return key
}

// do sends a request with the given Authorization value ("" sends none) and returns the
// response with its body read.
func (b *testBundle) do(t testing.TB, method, path, auth, body string) (*http.Response, []byte) {
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

// startApp runs one process (job queue, hub, relay, HTTP) over the store, until the test ends.
// startApp builds and starts an app on st; each of before is applied to it first (fields read
// when it starts, such as the hub's periods).
func startApp(t testing.TB, st *store.Store, o setupOpts, families map[string]llm.FamilyConfig, before ...func(*app.App)) (*app.App, string) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("SB_TEST_LOG") != "" { // the servers' logs, River's included, for a failing test
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	cfg := app.DefaultConfig()
	cfg.Server.PublicBaseURL = "http://switchboard.test"
	cfg.Server.KeyRPM, cfg.Server.WorkspaceRPM = o.keyRPM, o.workspaceRPM
	cfg.Server.SSEPingInterval = o.ping
	cfg.Server.Development = o.development
	cfg.MeterFlushInterval = o.meterFlush
	if o.bodyLimit > 0 {
		cfg.Server.BodyLimitBytes = o.bodyLimit
	}
	if o.signInPerMinute > 0 {
		cfg.Accounts.SignInPerMinute = o.signInPerMinute
	}
	if o.confirmationTTL > 0 {
		cfg.ConfirmationTTL = o.confirmationTTL
	}
	cfg.Responses = responses.Config{TTL: o.responseTTL, IdempotencyRetention: o.idempotencyRetention}
	cfg.Families = families
	cfg.WebhookAllowPrivate = o.allowPrivate
	cfg.Clock, cfg.SMTPURL = o.clock, o.smtpURL
	if o.smsBaseURL != "" {
		cfg.SMS = sms.Config{AccountSID: smstest.AccountSID, AuthToken: smstest.AuthToken, BaseURL: o.smsBaseURL}
	}
	if o.msgappsURL != "" {
		cfg.MsgApps = msgapps.Config{GraphURL: o.msgappsURL, InstagramURL: o.msgappsURL + "/ig", TelegramURL: o.msgappsURL}
	}
	if o.campaignPeriod > 0 {
		cfg.CampaignPeriod = o.campaignPeriod
	}
	if o.inboxSweep > 0 {
		cfg.InboxSweepPeriod = o.inboxSweep
	}
	cfg.VoiceSlowAfter = o.voiceSlowAfter
	cfg.Delivery = events.DeliveryConfig{RetryBase: 50 * time.Millisecond, Timeout: 2 * time.Second, DisableAfter: o.disableAfter}
	a, err := app.New(cfg, st, catalog.Default(), log)
	require.NoError(t, err)
	for _, f := range before {
		f(a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, a.Start(ctx))
	ts := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		ts.Close()
		cancel()
		stopCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		_ = a.Stop(stopCtx)
	})
	return a, ts.URL
}

// replica starts a second process on the same database, with its own connection pool, as
// another replica would; it returns its base URL.
func (b *testBundle) replica(t *testing.T, before ...func(*app.App)) (*app.App, string) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), b.store.Pool().Config().ConnString())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return startApp(t, store.New(pool), b.opts, b.families, before...)
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func readAll(t testing.TB, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return raw
}

func mustUUID(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	require.NoError(t, err)
	return id
}
