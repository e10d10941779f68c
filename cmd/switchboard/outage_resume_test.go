package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/app"
	"switchboard/llm/llmtest"
	"switchboard/store"
)

// flakyReceiver is a webhook receiver that refuses the first delivery of each event (500)
// and takes the next: a refused delivery waits for its retry.
type flakyReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	attempts map[string]int // by webhook-id
	taken    []string
}

func newFlakyReceiver(t *testing.T) *flakyReceiver {
	r := &flakyReceiver{attempts: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get("webhook-id")
		r.mu.Lock()
		defer r.mu.Unlock()
		r.attempts[id]++
		if r.attempts[id] == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		r.taken = append(r.taken, id)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *flakyReceiver) counts() (refused, taken int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.attempts), len(r.taken)
}

var metricLine = regexp.MustCompile(`(?m)^(go_goroutines|switchboard_db_pool_connections_max) ([0-9.e+]+)$`)

// settledGoroutines is the process's goroutine count once it stops falling (idle
// connections closed, workers back in their loops).
func settledGoroutines(t *testing.T, env map[string]string) int {
	t.Helper()
	last := -1
	for i := 0; i < 100; i++ {
		http.DefaultClient.CloseIdleConnections()
		n, _ := metricsOf(t, env["METRICS_ADDR"])
		if n == last {
			return n
		}
		last = n
		time.Sleep(500 * time.Millisecond)
	}
	return last
}

// metricsOf reads the process's goroutines and pool size from METRICS_ADDR.
func metricsOf(t *testing.T, addr string) (goroutines, poolMax int) {
	t.Helper()
	scrape := scrapeUntil(t, addr, "switchboard_db_pool_connections_max", "metrics")
	for _, m := range metricLine.FindAllStringSubmatch(scrape, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		if m[1] == "go_goroutines" {
			goroutines = int(v)
		} else {
			poolMax = int(v)
		}
	}
	return goroutines, poolMax
}

// TestPostgresOutageResumesWorkAndLeaksNothing: the work in flight when PostgreSQL goes away
// resumes once it is back, without a restart: a background turn whose model answered during
// the outage completes with that answer (its commit waits for the database), charged once; a webhook delivery whose retry fell due during the
// outage is delivered; an event feed held open through it gets every event once, in order,
// with no gap. Afterwards the process holds no more goroutines than before (feeds and
// workers back to their places) and no more database connections than its pool allows.
func TestPostgresOutageResumesWorkAndLeaksNothing(t *testing.T) {
	t.Parallel()
	pg := startCluster(t)
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	env["DATABASE_URL"] = pg.url()
	env["METRICS_ADDR"] = freeAddr(t)
	env["PPROF_ADDR"] = freeAddr(t) // the goroutines, should any be left over
	env["WEBHOOK_ALLOW_PRIVATE"] = "1"
	env["SECRETS_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	env["WEBHOOK_RETRY_BASE"] = "2s"
	env["RESPONSE_TTL"] = "5m" // the sweep must not fail the turn the outage held up
	p := startServe(t, env)
	hook := newFlakyReceiver(t)

	status, _, raw := call(p.base, key, http.MethodPost, "/v1/webhooks",
		`{"url":"`+hook.URL+`","event_types":["turn.completed"]}`)
	require.Equal(t, http.StatusCreated, status, string(raw))
	feedCtx, stopFeed := context.WithCancel(context.Background())
	defer stopFeed()
	lines := feed(feedCtx, p.base, key)
	before := p.post(t, key, `{"input":"before the outage"}`)["id"].(string)
	require.Eventually(t, func() bool { refused, _ := hook.counts(); return refused == 1 }, 20*time.Second, 20*time.Millisecond,
		"the first delivery was refused, so its retry is due two seconds later: during the outage")
	http.DefaultClient.CloseIdleConnections() // the server's goroutines of this test's idle connections
	idle, poolMax := metricsOf(t, env["METRICS_ADDR"])

	// A background turn whose model answers 1.5 s from now, when the database is gone.
	fake.Push(llmtest.Reply{Text: "answered in the dark", Delay: 1500 * time.Millisecond})
	status, _, raw = call(p.base, key, http.MethodPost, "/v1/responses", `{"input":"during the outage","background":true}`)
	require.Equal(t, http.StatusOK, status, string(raw))
	var queued struct{ ID string }
	require.NoError(t, json.Unmarshal(raw, &queued))
	require.Eventually(t, func() bool { return len(fake.Requests()) == 2 }, 20*time.Second, 10*time.Millisecond, "the background turn asked the model")
	pg.stop(t)
	time.Sleep(4 * time.Second) // the model answers and the delivery's retry falls due, both in the outage
	pg.start(t)

	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, raw := call(p.base, key, http.MethodGet, "/v1/responses/"+queued.ID, "")
		if strings.Contains(string(raw), `"status":"completed"`) {
			// The answer that came during the outage is stored once the database is back
			// (the turn's commit waits for it): the model is not asked again, and the
			// workspace is charged once (below).
			require.Contains(t, string(raw), "answered in the dark", "the answer given during the outage is kept")
			require.Len(t, fake.Requests(), 2, "the model was not asked a second time")
			break
		}
		require.True(t, time.Now().Before(deadline), "the background turn did not complete after the outage: %s", raw)
		time.Sleep(50 * time.Millisecond)
	}
	require.Eventually(t, func() bool { _, taken := hook.counts(); return taken >= 2 }, 30*time.Second, 50*time.Millisecond,
		"the refused delivery and the background turn's are delivered after the outage")
	after := p.post(t, key, `{"input":"after the outage"}`)["id"].(string)

	// The feed: every event of the workspace once, in order, from the first to the last.
	total := countRows(t, pg.url(), `SELECT count(*) FROM events`)
	var seen []int64
	require.Eventually(t, func() bool {
		for {
			select {
			case l := <-lines:
				if id, ok := strings.CutPrefix(l, "id: "); ok {
					n, err := strconv.ParseInt(id, 10, 64)
					require.NoError(t, err)
					seen = append(seen, n)
				}
			default:
				return len(seen) > 0 && seen[len(seen)-1] >= int64(total)
			}
		}
	}, 30*time.Second, 50*time.Millisecond, "the feed caught up")
	require.NotEmpty(t, seen)
	for i, n := range seen {
		require.Equal(t, seen[0]+int64(i), n, "event %d of the feed: no gap and no duplicate across the outage", i)
	}
	require.Equal(t, int64(total), seen[len(seen)-1], "the feed reached the last event")

	// Nothing acknowledged is missing, the turn is charged once, and nothing leaked.
	for _, id := range []string{before, queued.ID, after} {
		require.Equal(t, 1, countRows(t, pg.url(), `SELECT count(*) FROM responses WHERE short_id = '`+id+`'`), id)
	}
	charged := `SELECT count(*) FROM ledger l JOIN responses r ON r.conversation_id = l.conversation_id WHERE r.short_id = '` + queued.ID + `'`
	require.Eventually(t, func() bool { return countRows(t, pg.url(), charged) > 0 }, 20*time.Second, 50*time.Millisecond, "the turn is charged")
	stopFeed()

	// No leak: the goroutines after a second outage are those after the first (River's
	// leader and maintenance goroutines, the pool's, keep-alive connections settle once);
	// what each outage left behind would add up.
	first := settledGoroutines(t, env)
	pg.stop(t)
	time.Sleep(2 * time.Second)
	pg.start(t)
	require.Eventually(t, func() bool {
		status, _, _ := call(p.base, key, http.MethodGet, "/v1/responses/"+after, "")
		return status == http.StatusOK
	}, 20*time.Second, 50*time.Millisecond, "serving after the second outage")
	goroutines := settledGoroutines(t, env)
	if goroutines > first+2 {
		status, _, dump := call("http://"+env["PPROF_ADDR"], "", http.MethodGet, "/debug/pprof/goroutine?debug=1", "")
		t.Fatalf("%d goroutines after the second outage, %d after the first; the process's goroutines (%d):\n%s", goroutines, first, status, dump)
	}
	require.Equal(t, 1, countRows(t, pg.url(), charged), "the background turn is charged once")
	require.Positive(t, poolMax)
	// Counted until it settles: a backend whose client has just gone (one the pool is
	// replacing) stays in pg_stat_activity for a few milliseconds after its socket closes; a
	// leaked connection stays for good. Counted by application_name, so the test's own
	// connections (countRows) are not the process's, and each of the process's pools is held
	// to its own size.
	var over string
	settled := assert.Eventually(t, func() bool {
		over = overLimit(processBackends(t, pg.url()), map[string]int{
			store.AppName:                   poolMax + 1, // and River's LISTEN, taken out of the pool
			store.AppName + " events":       1,           // the events hub's LISTEN
			store.AppName + " replica lock": 1,
			store.AppName + " hooks":        app.HookConns,
			store.AppName + " reports":      app.HookConns,
		})
		return over == ""
	}, 10*time.Second, 100*time.Millisecond, "each pool within its size, one LISTEN each for events and River, one replica lock")
	t.Logf("goroutines: %d before the outages, %d after the first, %d after the second; connections (pool of %d): %v", idle, first, goroutines, poolMax, processBackends(t, pg.url()))
	if !settled {
		t.Fatalf("%s:\n%s", over, clientBackends(t, pg.url()))
	}
	require.NotContains(t, p.logs.String(), "panic")
}

// processBackends counts the process's database connections by application_name (store.AppName
// and the names it starts).
func processBackends(t *testing.T, databaseURL string) map[string]int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), databaseURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT application_name, count(*) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name LIKE $1 || '%'
		GROUP BY 1`, store.AppName)
	require.NoError(t, err)
	counts := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		require.NoError(t, rows.Scan(&name, &n))
		counts[name] = n
	}
	require.NoError(t, rows.Err())
	return counts
}

// overLimit says which of counts exceed their limit (or have none), or "" when none does.
func overLimit(counts, limits map[string]int) string {
	var over []string
	for name, n := range counts {
		if limit, ok := limits[name]; !ok || n > limit {
			over = append(over, fmt.Sprintf("%d connections named %q, at most %d expected", n, name, limits[name]))
		}
	}
	return strings.Join(over, "; ")
}

// clientBackends lists the database's client connections (but the one asking), one a line,
// for a failure's message: when each started, its name, its state and its last statement.
func clientBackends(t *testing.T, databaseURL string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), databaseURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT backend_start::text, application_name, coalesce(state, ''), left(query, 120)
		FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() ORDER BY backend_start`)
	require.NoError(t, err)
	var b strings.Builder
	for rows.Next() {
		var started, name, state, query string
		require.NoError(t, rows.Scan(&started, &name, &state, &query))
		fmt.Fprintf(&b, "%s  %-26s  %-6s  %s\n", started, name, state, query)
	}
	require.NoError(t, rows.Err())
	return b.String()
}
