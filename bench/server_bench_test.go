package bench

// In-process benchmarks of scenarios 2 (ephemeral chat completion) and 3 (stored response),
// for CPU and allocation profiles. The server is built exactly as `switchboard serve` builds it
// (app.New over store.Open, with the JSON logger writing to io.Discard instead of stderr), and
// requests go straight to its http.Handler, so the profile holds the server's work and the
// vendor call to a real mockllm, not a load generator's. bench/run.sh profile runs them:
//
//	go test -c -o bench.test ./bench
//	BENCH_DATABASE_URL=... BENCH_MOCK_URL=... ./bench.test -test.run '^$' \
//	    -test.bench '^BenchmarkEphemeralChat$' -test.cpuprofile cpu.out -test.memprofile mem.out
//	go tool pprof -top bench.test cpu.out
//
// The decomposition benchmarks (VendorCall, AuthOnly, CommitEphemeral) time the parts of one
// turn on their own.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/apikey"
	"switchboard/app"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/store"
)

// env is the in-process server shared by the benchmarks of one test binary run.
var env struct {
	handler   http.Handler
	store     *store.Store
	key       string
	workspace uuid.UUID
	mockURL   string
	skip      string
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	admin, mock := os.Getenv("BENCH_DATABASE_URL"), os.Getenv("BENCH_MOCK_URL")
	if admin == "" || mock == "" {
		env.skip = "BENCH_DATABASE_URL and BENCH_MOCK_URL are not set (bench/run.sh profile sets them)"
		return m.Run()
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sbbench")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	dbURL, drop, err := freshDatabase(ctx, admin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer drop()
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer st.Close()
	if _, err := store.Migrate(ctx, st.Pool()); err != nil {
		fmt.Fprintln(os.Stderr, "bench: migrate:", err)
		return 1
	}
	w, err := st.CreateWorkspace(ctx, "bench", 1_000_000_000_000_000)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	key, sum, display := apikey.New()
	if _, err := st.CreateKey(ctx, w.ID, "owner", sum, display); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil)) // formatted like serve's, then dropped
	cfg := app.DefaultConfig()
	cfg.Server.PublicBaseURL = "http://127.0.0.1"
	cfg.Server.KeyRPM, cfg.Server.WorkspaceRPM = 100_000_000, 100_000_000
	cfg.Families = families(mock)
	cfg.WebhookAllowPrivate = true
	// The agent benchmarks' model calls search_knowledge_base, then answers (agent_bench_test.go).
	models := dir + "/models.yaml"
	if err := os.WriteFile(models, []byte(agentModel+":\n  upstream: \""+agentUpstream+"\"\n"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	cat, err := catalog.Load(models)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	a, err := app.New(cfg, st, cat, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: app:", err)
		return 1
	}
	if err := a.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench: start:", err)
		return 1
	}
	defer func() {
		stop, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = a.Stop(stop)
	}()
	env.handler, env.store, env.key, env.workspace, env.mockURL = a.Handler(), st, key, w.ID, mock
	return m.Run()
}

func families(mock string) map[string]llm.FamilyConfig {
	return map[string]llm.FamilyConfig{
		"alpha": {Protocol: llm.ProtocolAnthropic, BaseURL: mock, APIKey: "x"},
		"beta":  {Protocol: llm.ProtocolOpenAI, BaseURL: mock + "/v1", APIKey: "x"},
		"gamma": {Protocol: llm.ProtocolGemini, BaseURL: mock, APIKey: "x"},
	}
}

// freshDatabase creates a database in the cluster of admin, migrated by the caller, and
// returns its URL and a function that drops it.
func freshDatabase(ctx context.Context, admin string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("connect to BENCH_DATABASE_URL: %w", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "sbbench_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	u, err := url.Parse(admin)
	if err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		conn.Close(context.Background())
	}
	return u.String(), drop, nil
}

func need(b *testing.B) {
	b.Helper()
	if env.skip != "" {
		b.Skip(env.skip)
	}
}

// serve runs one request through the server's handler and checks the answer.
func serve(b *testing.B, method, path string, body []byte, want []byte) {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+env.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || (want != nil && !bytes.Contains(rec.Body.Bytes(), want)) {
		b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
	}
}

var (
	chatBody     = []byte(`{"model":"alpha-sonnet-4-6","messages":[{"role":"user","content":"Say hello."}]}`)
	responseBody = []byte(`{"model":"alpha-sonnet-4-6","input":"Say hello."}`)
)

// BenchmarkEphemeralChat is scenario 2: POST /v1/chat/completions without a conversation.
func BenchmarkEphemeralChat(b *testing.B) {
	need(b)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, http.MethodPost, "/v1/chat/completions", chatBody, []byte(`"finish_reason":"stop"`))
	}
}

// BenchmarkStoredResponse is scenario 3: POST /v1/responses, stored.
func BenchmarkStoredResponse(b *testing.B) {
	need(b)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, http.MethodPost, "/v1/responses", responseBody, []byte(`"status":"completed"`))
	}
}

// The parallel forms keep 64 requests in flight (SetParallelism(32) on 2 CPUs).
func BenchmarkEphemeralChatParallel(b *testing.B) {
	need(b)
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			serve(b, http.MethodPost, "/v1/chat/completions", chatBody, nil)
		}
	})
}

// The OpenAI-protocol forms (beta-5.4, the model of scenario 7's comparison with the Portkey
// gateway): the same ephemeral turn over the openai adapter.
var chatBodyOpenAI = []byte(`{"model":"beta-5.4","messages":[{"role":"user","content":"Say hello."}]}`)

func BenchmarkEphemeralChatOpenAI(b *testing.B) {
	need(b)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, http.MethodPost, "/v1/chat/completions", chatBodyOpenAI, []byte(`"finish_reason":"stop"`))
	}
}

func BenchmarkEphemeralChatOpenAIParallel(b *testing.B) {
	need(b)
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			serve(b, http.MethodPost, "/v1/chat/completions", chatBodyOpenAI, nil)
		}
	})
}

func BenchmarkStoredResponseParallel(b *testing.B) {
	need(b)
	b.ReportAllocs()
	b.SetParallelism(32)
	var since time.Time
	_ = env.store.Pool().QueryRow(context.Background(), `SELECT now()`).Scan(&since)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			serve(b, http.MethodPost, "/v1/responses", responseBody, nil)
		}
	})
	// Turns per commit (group commit): the ledger rows of one transaction share its now().
	var perCommit float64
	if err := env.store.Pool().QueryRow(context.Background(), `SELECT count(*)::float8 / greatest(count(DISTINCT created_at), 1)
		FROM ledger WHERE workspace_id = $1 AND created_at >= $2 AND conversation_id IS NOT NULL`, env.workspace, since).Scan(&perCommit); err == nil {
		b.ReportMetric(perCommit, "turns/commit")
	}
}

// BenchmarkAuthOnly is a /v1 request without a turn: GET /v1/models (key lookup, budgets,
// request validation, routing, logging).
func BenchmarkAuthOnly(b *testing.B) {
	need(b)
	b.ReportAllocs()
	for b.Loop() {
		serve(b, http.MethodGet, "/v1/models", nil, nil)
	}
}

// BenchmarkVendorCall is the model call alone: the adapter (the vendor's SDK) streaming the
// mock's answer, as a turn makes it.
func BenchmarkVendorCall(b *testing.B) {
	need(b)
	reg, err := llm.NewRegistry(families(env.mockURL), false, &http.Client{}, 5*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	client, err := reg.For("alpha")
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{Model: "alpha-sonnet-4-6", System: "You are a benchmark.", Messages: []llm.Message{{Role: llm.RoleUser, Text: "Say hello."}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := client.Generate(context.Background(), req, func(string) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitEphemeral is the database work of an ephemeral turn alone, as the turn
// pipeline commits it: the charge (workspace balance and ledger row) and its two events
// (rows, dispatch rows, NOTIFY), in one transaction settled by store.(*Tx).Settle.
func BenchmarkCommitEphemeral(b *testing.B) {
	need(b)
	ctx := context.Background()
	charge := &store.Charge{AmountNanoUSD: 138000, Category: "model_usage", Model: "alpha-sonnet-4-6", InputTokens: 11, OutputTokens: 5}
	b.ReportAllocs()
	for b.Loop() {
		err := env.store.InTx(ctx, func(tx *store.Tx) error {
			_, _, err := tx.Settle(ctx, env.workspace, charge, func(balance int64) []store.NewEvent {
				return []store.NewEvent{
					{Type: "turn.completed", Data: map[string]any{"conversation_id": nil, "surface": "chat.completions",
						"reply_preview": "lorem ipsum", "finish_reason": "stop", "model": "alpha-sonnet-4-6"}},
					{Type: "spend.recorded", Data: map[string]any{"amount_usd": "0.000138", "category": "model_usage", "balance_usd": balance}},
				}
			})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConversationLength is a chat completion continuing a stored conversation of N
// messages (alternating user and assistant, about 60 bytes each): the turn's added cost as
// the conversation grows. A turn sends only the newest messages that fit its model's window
// (agent.HistoryWindow, at most agent.HistoryMaxMessages), read from the end of the primary
// key. The two messages each turn appends are removed between iterations (timer stopped), so
// every iteration sees N.
func BenchmarkConversationLength(b *testing.B) {
	need(b)
	ctx := context.Background()
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			var convID uuid.UUID
			var shortID string
			err := env.store.Pool().QueryRow(ctx, `INSERT INTO conversations (workspace_id, short_id, channel, message_seq)
				VALUES ($1, 'mc-bench' || substr(md5(random()::text), 1, 16), 'api', $2) RETURNING id, short_id`, env.workspace, n).Scan(&convID, &shortID)
			if err != nil {
				b.Fatal(err)
			}
			_, err = env.store.Pool().Exec(ctx, `INSERT INTO messages (workspace_id, conversation_id, seq, role, content)
				SELECT $1, $2, i, CASE WHEN i % 2 = 1 THEN 'user' ELSE 'assistant' END,
				       'Message ' || i || ' of the benchmark conversation, lorem ipsum dolor.'
				FROM generate_series(1, $3::int) i`, env.workspace, convID, n)
			if err != nil {
				b.Fatal(err)
			}
			// The planner's statistics, as autovacuum keeps them on a live database.
			if _, err := env.store.Pool().Exec(ctx, `ANALYZE messages`); err != nil {
				b.Fatal(err)
			}
			body := []byte(`{"model":"alpha-sonnet-4-6","conversation":"` + shortID + `","messages":[{"role":"user","content":"Say hello."}]}`)
			b.ReportAllocs()
			for b.Loop() {
				serve(b, http.MethodPost, "/v1/chat/completions", body, []byte(`"finish_reason":"stop"`))
				b.StopTimer()
				if _, err := env.store.Pool().Exec(ctx, `DELETE FROM messages WHERE conversation_id = $1 AND seq > $2`, convID, n); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
