package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/llm/llmtest"
	"switchboard/ratelimit/redistest"
)

func (p *process) status(t *testing.T, key, path string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.base+path, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// scrapeUntil reads METRICS_ADDR's /metrics until it contains want, and returns that scrape.
func scrapeUntil(t *testing.T, metricsAddr, want, msg string) string {
	t.Helper()
	var scrape string
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		scrape = string(body)
		return strings.Contains(scrape, want)
	}, 30*time.Second, 50*time.Millisecond, msg)
	return scrape
}

// TestTwoProcessesShareOneRedisBudget: with REDIS_URL, a burst split across two replicas is
// refused at the combined limit; when Redis stops, both keep serving (fail open) and say so.
func TestTwoProcessesShareOneRedisBudget(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t)
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	env["REDIS_URL"] = redis.URL
	env["RATE_LIMIT_KEY_RPM"] = "10"
	a, b := startServe(t, env), startServe(t, env)
	require.Equal(t, http.StatusOK, a.status(t, "", "/ready"))

	allowed, refused := 0, 0
	for i := 0; i < 16; i++ {
		switch code := []*process{a, b}[i%2].status(t, key, "/v1/models"); code {
		case http.StatusOK:
			allowed++
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Fatalf("status %d", code)
		}
	}
	// The budget refills 10 a minute: one more may come back during the burst.
	require.GreaterOrEqual(t, allowed, 10)
	require.LessOrEqual(t, allowed, 11, "one budget for both replicas, not 10 each")
	require.Equal(t, 16-allowed, refused)

	redis.Stop()
	require.Equal(t, http.StatusOK, a.status(t, "", "/ready"), "degraded, still ready: the limits fail open")
	for _, p := range []*process{a, b} {
		require.Equal(t, http.StatusOK, p.status(t, key, "/v1/models"), "served in-process while Redis is gone")
		require.Eventually(t, func() bool { return strings.Contains(p.logs.String(), "fail open") }, 5*time.Second, 20*time.Millisecond)
	}
}

// TestSIGTERMMarksNotReadyThenDrains: after SIGTERM the replica answers /ready 503 for
// DRAIN_DELAY while it still serves requests, then stops.
func TestSIGTERMMarksNotReadyThenDrains(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	env["DRAIN_DELAY"] = "3s"
	p := startServe(t, env)
	require.Equal(t, http.StatusOK, p.status(t, "", "/ready"))

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool { return p.status(t, "", "/ready") == http.StatusServiceUnavailable }, 2*time.Second, 10*time.Millisecond)
	require.Equal(t, http.StatusOK, p.status(t, key, "/v1/models"), "still serving while load balancers catch up")
	require.Eventually(t, func() bool { return strings.Contains(p.logs.String(), `"msg":"stopped"`) }, 20*time.Second, 50*time.Millisecond)
}

// TestMetricsCountTurnsDeliveriesAndRefusals: with METRICS_ADDR, a scrape after a turn, a
// webhook delivery and a rate-limit refusal finds each counted; the public port has no
// /metrics.
func TestMetricsCountTurnsDeliveriesAndRefusals(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	metricsAddr := freeAddr(t)
	env["METRICS_ADDR"] = metricsAddr
	env["WEBHOOK_ALLOW_PRIVATE"] = "1"
	env["SECRETS_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	env["RATE_LIMIT_KEY_RPM"] = "8"
	p := startServe(t, env)

	received := make(chan struct{}, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received <- struct{}{}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	req, err := http.NewRequest(http.MethodPost, p.base+"/v1/webhooks", strings.NewReader(`{"url":"`+receiver.URL+`","event_types":["*"]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	require.Equal(t, "completed", p.post(t, key, `{"input":"hello"}`)["status"])
	select {
	case <-received:
	case <-time.After(30 * time.Second):
		t.Fatal("no webhook delivery")
	}
	refused := false
	for i := 0; i < 20 && !refused; i++ {
		refused = p.status(t, key, "/v1/models") == http.StatusTooManyRequests
	}
	require.True(t, refused, "RATE_LIMIT_KEY_RPM=8 refuses within 20 requests")
	require.Equal(t, http.StatusNotFound, p.status(t, "", "/metrics"), "never on the public port")

	scrape := scrapeUntil(t, metricsAddr, `switchboard_webhook_deliveries_total{outcome="delivered"}`,
		"the delivery is counted once its job ends")
	for _, want := range []string{
		`switchboard_turns_total{model="alpha-sonnet-4-6",outcome="completed",surface="responses"} 1`,
		`switchboard_vendor_call_duration_seconds_count{family="alpha",outcome="ok"} 1`,
		`switchboard_tokens_total{direction="output",model="alpha-sonnet-4-6"}`,
		`switchboard_spend_usd_total{model="alpha-sonnet-4-6"}`,
		`switchboard_rate_limit_refusals_total{budget="key"} 1`,
		`switchboard_http_request_duration_seconds_count{method="POST",route="/v1/responses",status="200"} 1`,
		`switchboard_http_request_duration_seconds_count{method="GET",route="/v1/models",status="429"} 1`,
		`switchboard_jobs_worked_total{kind="webhook_delivery",outcome="ok"}`,
		`switchboard_job_queue_oldest_age_seconds`,
		`switchboard_sse_subscribers 0`,
		`switchboard_db_pool_connections_max`,
	} {
		require.Contains(t, scrape, want)
	}
	require.NotContains(t, scrape, key[:12])
}

// TestPprofAddrServesProfilesOffThePublicPort: with PPROF_ADDR, a CPU profile taken while
// turns run samples the server's own request path, and a goroutine dump names its code; the
// public port serves neither.
func TestPprofAddrServesProfilesOffThePublicPort(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	pprofAddr := freeAddr(t)
	env["PPROF_ADDR"] = pprofAddr
	// The load below would spend the default budgets in a second; refusals never reach the
	// handlers the profile has to find.
	env["RATE_LIMIT_KEY_RPM"] = "10000000"
	env["RATE_LIMIT_WORKSPACE_RPM"] = "10000000"
	p := startServe(t, env)

	// CPU sampling is a lottery at 100 Hz on a busy machine: a profile is taken under
	// steady load, and a second or third is taken only when one missed the server's code.
	var body string
	for attempt := 0; attempt < 3 && !sampledServer(body); attempt++ {
		body = profileUnderLoad(t, p, pprofAddr, key)
	}
	require.Contains(t, body, "net/http.(*conn).serve", "the profile sampled the requests it was taken during")
	require.Contains(t, body, "switchboard/server.", "and names the server's own functions")

	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/goroutine?debug=1")
	require.NoError(t, err)
	dump, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(dump), "switchboard/")

	require.Equal(t, http.StatusNotFound, p.status(t, "", "/debug/pprof/"), "never on the public port")
	require.Equal(t, http.StatusNotFound, p.status(t, key, "/debug/pprof/profile?seconds=1"))
}

// sampledServer says whether a decompressed CPU profile sampled the server's request path.
func sampledServer(profile string) bool {
	return strings.Contains(profile, "net/http.(*conn).serve") && strings.Contains(profile, "switchboard/server.")
}

// profileUnderLoad is a 2-second CPU profile from pprofAddr, decompressed, taken while four
// clients list models without pause.
func profileUnderLoad(t *testing.T, p *process, pprofAddr, key string) string {
	t.Helper()
	stop := make(chan struct{})
	var clients sync.WaitGroup
	for i := 0; i < 4; i++ {
		clients.Add(1)
		go func() {
			defer clients.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest(http.MethodGet, p.base+"/v1/models", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	defer func() { close(stop); clients.Wait() }()

	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/profile?seconds=2")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	zipped, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	body := gunzip(zipped)
	require.NotNil(t, body, "the CPU profile answers, gzipped")
	return string(body)
}

// gunzip is the decompressed form of a gzipped profile, or nil.
func gunzip(b []byte) []byte {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil
	}
	return out
}

// TestClientThatHangsUpIsA499NotAFailure: a client that closes its connection while the
// vendor is still working is not the server failing. The access log and the request metric say
// 499 (nginx's "client closed request"), the vendor call and the turn count as cancelled, and
// no error is logged; before, each such request was a 500, a vendor "timeout" and an ERROR line.
func TestClientThatHangsUpIsA499NotAFailure(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	fake.Push(llmtest.Reply{Text: "nobody reads this", Delay: time.Minute})
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	metricsAddr := freeAddr(t)
	env["METRICS_ADDR"] = metricsAddr
	p := startServe(t, env)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/v1/chat/completions",
		strings.NewReader(`{"model":"alpha-sonnet-4-6","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return len(fake.Requests()) == 1 }, 30*time.Second, 10*time.Millisecond,
		"the turn reaches the vendor")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	// The access metric, the vendor call and the turn are recorded by different goroutines
	// as the cancellation reaches each, so each is awaited on its own.
	var scrape string
	for _, want := range []string{
		`switchboard_http_request_duration_seconds_count{method="POST",route="/v1/chat/completions",status="499"} 1`,
		`switchboard_vendor_call_duration_seconds_count{family="alpha",outcome="cancelled"} 1`,
		`switchboard_turns_total{model="alpha-sonnet-4-6",outcome="cancelled",surface="chat.completions"} 1`,
	} {
		scrape = scrapeUntil(t, metricsAddr, want, "counted once the cancellation reaches it: "+want)
	}
	require.NotContains(t, scrape, `status="500"`)
	require.NotContains(t, scrape, `outcome="timeout"`)

	accessLine := regexp.MustCompile(`"msg":"request".*"path":"/v1/chat/completions","status":499`)
	require.Eventually(t, func() bool { return accessLine.MatchString(p.logs.String()) }, 30*time.Second,
		10*time.Millisecond, "the access log says 499 (stderr is copied into logs by another goroutine)")
	require.NotContains(t, p.logs.String(), `"level":"ERROR"`)
	require.Equal(t, "completed", p.post(t, key, `{"input":"hello"}`)["status"], "the server goes on serving")
}

// TestKilledReplicaTurnsFinishOnTheOther: a replica killed with SIGKILL while 8 slow
// background turns run on it; the other replica runs each again and completes all of them
// within 30 s, each announced once and charged once.
func TestKilledReplicaTurnsFinishOnTheOther(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	for i := 0; i < 8; i++ {
		fake.Push(llmtest.Reply{Text: "never finished", Delay: time.Minute})
	}
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	env["RESPONSE_TTL"] = "10m" // the sweep must not be what ends them
	doomed := startServe(t, env)
	var ids []string
	for i := 0; i < 8; i++ {
		ids = append(ids, doomed.post(t, key, `{"input":"long job","background":true}`)["id"].(string))
	}
	require.Eventually(t, func() bool { return len(fake.Requests()) == 8 }, 30*time.Second, 20*time.Millisecond, "all 8 turns run on the doomed replica")
	survivor := startServe(t, env)

	require.NoError(t, doomed.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	for _, id := range ids {
		require.Eventually(t, func() bool { return survivor.get(t, key, id)["status"] == "completed" }, 30*time.Second-time.Since(killed), 50*time.Millisecond,
			"response %s completed on the survivor within 30 s of the kill", id)
	}
	require.Len(t, fake.Requests(), 16, "each turn ran exactly once more")
	require.Equal(t, 8, countRows(t, env["DATABASE_URL"], `SELECT count(*) FROM events WHERE type = 'meta_response.completed'`))
	require.Equal(t, 8, countRows(t, env["DATABASE_URL"], `SELECT count(*) FROM ledger`), "each charged once")
}
