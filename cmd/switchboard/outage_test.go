package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/llm/llmtest"
)

// pgCluster is a throwaway PostgreSQL of the test's own (scripts/pgcluster.sh), which the
// test may stop and start.
type pgCluster struct {
	dir, port string
}

func startCluster(t *testing.T) *pgCluster {
	t.Helper()
	parent, err := os.MkdirTemp("", "switchboard-outage")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(parent, 0o755)) // as root, the cluster runs as the postgres user
	c := &pgCluster{dir: filepath.Join(parent, "data"), port: stablePort(t)}
	t.Cleanup(func() {
		c.run(t, "stop")
		os.RemoveAll(parent)
	})
	c.start(t)
	return c
}

// stablePort is a free port below the kernel's ephemeral range, for a server that is stopped
// and started again on the same port. A port from the ephemeral range (a listener on :0)
// may be taken, while the server is down, as the local port of some other process's
// outgoing connection, and the restart then fails with "Address already in use" (seen
// once in `make test`, with the other packages' tests running beside this one); the kernel
// never gives out a port below that range by itself.
func stablePort(t *testing.T) string {
	t.Helper()
	low := 32768
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(raw)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	for range 100 {
		port := strconv.Itoa(10_000 + rand.IntN(max(low-10_000, 1)))
		if l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:"+port); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

func (c *pgCluster) url() string {
	return "postgres://postgres@127.0.0.1:" + c.port + "/postgres?sslmode=disable"
}

func (c *pgCluster) start(t *testing.T) { c.run(t, "start", c.port, "fast") }

// stop is `pg_ctl stop -m fast`: every session is ended (57P01) and the server goes away.
func (c *pgCluster) stop(t *testing.T) { c.run(t, "stop") }

func (c *pgCluster) run(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "pgcluster.sh"), append([]string{args[0], c.dir}, args[1:]...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "pgcluster.sh %s: %s", strings.Join(args, " "), out)
}

// call sends a request with the key and returns the status, headers and body; a transport
// error is status 0.
func call(base, key, method, path, body string) (int, http.Header, []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, raw
}

// feed follows GET /v1/events and sends each line of it; it reconnects with Last-Event-ID
// when the stream ends, as an SSE client does.
func feed(ctx context.Context, base, key string) <-chan string {
	lines := make(chan string, 1024)
	go func() {
		last := ""
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/events", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			if last != "" {
				req.Header.Set("Last-Event-ID", last)
			}
			resp, err := http.DefaultClient.Do(req)
			if err == nil && resp.StatusCode == http.StatusOK {
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
						last = id
					}
					lines <- sc.Text()
				}
			}
			if resp != nil {
				resp.Body.Close()
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return lines
}

// TestPostgresOutageAnswers503AndRecovers: PostgreSQL stopped under a running server. During
// the outage requests answer 503 database_unavailable with Retry-After, /ready is 503 and
// /health 200; once it is started again the server serves within 5 s without a restart: a
// request succeeds, a background turn queued after the return runs (River), an open event
// feed delivers its event (the LISTEN connection), and what was acknowledged before the
// outage is there.
func TestPostgresOutageAnswers503AndRecovers(t *testing.T) {
	t.Parallel()
	pg := startCluster(t)
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	env["DATABASE_URL"] = pg.url()
	p := startServe(t, env)

	// Acknowledged before the outage: a stored turn.
	before := p.post(t, key, `{"input":"before the outage"}`)["id"].(string)
	feedCtx, stopFeed := context.WithCancel(context.Background())
	defer stopFeed()
	lines := feed(feedCtx, p.base, key)

	pg.stop(t)
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/responses/" + before, ""},
		{http.MethodPost, "/v1/responses", `{"input":"during the outage"}`},
		{http.MethodGet, "/api/agents", ""},
		{http.MethodPost, "/api/contacts", `{"name":"Eve","phone":"+14155550100"}`},
	} {
		status, h, raw := call(p.base, key, c.method, c.path, c.body)
		require.Equal(t, http.StatusServiceUnavailable, status, "%s %s: %s", c.method, c.path, raw)
		require.NotEmpty(t, h.Get("Retry-After"), c.path)
		var env struct {
			Error struct{ Type, Code, Message string }
		}
		require.NoError(t, json.Unmarshal(raw, &env), string(raw))
		require.Equal(t, "database_unavailable", env.Error.Code, c.path)
		require.Equal(t, "server_error", env.Error.Type)
	}
	// An unknown key cannot be told from a known one without the database: 503, not 401.
	other, _, _ := apikey.New()
	status, _, raw := call(p.base, other, http.MethodGet, "/api/agents", "")
	require.Equal(t, http.StatusServiceUnavailable, status, string(raw))
	status, _, raw = call(p.base, "", http.MethodGet, "/ready", "")
	require.Equal(t, http.StatusServiceUnavailable, status, string(raw))
	status, _, _ = call(p.base, "", http.MethodGet, "/health", "")
	require.Equal(t, http.StatusOK, status)

	pg.start(t)
	back := time.Now()
	deadline := back.Add(5 * time.Second)
	poll := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			require.True(t, time.Now().Before(deadline), "%s not within 5 s of the database's return", what)
			time.Sleep(20 * time.Millisecond)
		}
	}
	poll("a request", func() bool {
		status, _, _ := call(p.base, key, http.MethodGet, "/v1/responses/"+before, "")
		return status == http.StatusOK
	})
	poll("/ready", func() bool {
		status, _, _ := call(p.base, "", http.MethodGet, "/ready", "")
		return status == http.StatusOK
	})
	t.Logf("serving %s after the database's return", time.Since(back).Round(time.Millisecond))

	// A background turn queued now runs (River), and the feed that stayed open hears it.
	status, _, raw = call(p.base, key, http.MethodPost, "/v1/responses", `{"input":"after the outage","background":true}`)
	require.Equal(t, http.StatusOK, status, string(raw))
	var queued struct{ ID string }
	require.NoError(t, json.Unmarshal(raw, &queued))
	poll("the background turn", func() bool {
		status, _, raw := call(p.base, key, http.MethodGet, "/v1/responses/"+queued.ID, "")
		return status == http.StatusOK && strings.Contains(string(raw), `"status":"completed"`)
	})
	poll("the feed's event", func() bool {
		for {
			select {
			case l := <-lines:
				if strings.Contains(l, "meta_response.completed") && strings.Contains(l, queued.ID) {
					return true
				}
			default:
				return false
			}
		}
	})
	t.Logf("background turn and feed event %s after the database's return", time.Since(back).Round(time.Millisecond))

	logs := p.logs.String()
	require.NotContains(t, logs, "panic")
	require.Equal(t, 1, countRows(t, pg.url(), `SELECT count(*) FROM responses WHERE short_id = '`+before+`'`), "acknowledged before the outage")
}
