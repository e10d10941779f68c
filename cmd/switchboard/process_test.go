package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/llm/llmtest"
	"switchboard/store/storetest"
)

var (
	buildOnce sync.Once
	binaryDir string
	binary    string
	buildErr  error
)

// TestMain removes the binary the tests built: it is some 170 MB, and a temporary directory
// left behind by every run fills a developer's disk.
func TestMain(m *testing.M) {
	code := m.Run()
	if binaryDir != "" {
		os.RemoveAll(binaryDir)
	}
	os.Exit(code)
}

// switchboardBinary builds the real binary once per test run.
func switchboardBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "switchboard-bin")
		if err != nil {
			buildErr = err
			return
		}
		binaryDir = dir
		binary = filepath.Join(dir, "switchboard")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binary
}

// process is a running `switchboard serve`.
type process struct {
	cmd  *exec.Cmd
	base string
	logs *syncBuffer
}

func startServe(t *testing.T, env map[string]string) *process {
	t.Helper()
	// The free port is found by closing a listener, so another program may take it before
	// the server binds it; then the server exits and we try another port.
	for attempt := 0; ; attempt++ {
		p, err := tryServe(t, env)
		if err == nil {
			return p
		}
		if attempt == 4 || !strings.Contains(p.logs.String(), "address already in use") {
			t.Fatalf("serve did not start: %v\n%s", err, p.logs.String())
		}
	}
}

func tryServe(t *testing.T, env map[string]string) (*process, error) {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(switchboardBinary(t), "serve")
	cmd.Env = append(os.Environ(), "ADDR="+addr)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &process{cmd: cmd, base: "http://" + addr, logs: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("logs of %s:\n%s", p.base, p.logs.String())
		}
	})
	deadline := time.After(30 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			return p, fmt.Errorf("exited: %v", err)
		case <-deadline:
			return p, fmt.Errorf("%s/health never answered 200", p.base)
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := http.Get(p.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
	}
}

// syncBuffer is a bytes.Buffer safe to write from the process's output copier while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (p *process) post(t *testing.T, key, body string, header ...string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.base+"/v1/responses", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return doJSON(t, req)
}

func (p *process) get(t *testing.T, key, id string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.base+"/v1/responses/"+id, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	return doJSON(t, req)
}

func doJSON(t *testing.T, req *http.Request) map[string]any {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func processEnv(t *testing.T, fake *llmtest.Fake, key string) map[string]string {
	return map[string]string{
		"DATABASE_URL":      storetest.NewURL(t),
		"APP_ENV":           "production",
		"BOOTSTRAP_API_KEY": key,
		"ALPHA_API_KEY":     "vendor-key",
		"ALPHA_BASE_URL":    fake.URL,
		"RESPONSE_TTL":      "3s",
		"DRAIN_DELAY":       "100ms",
	}
}

func countRows(t *testing.T, databaseURL, query string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), databaseURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), query).Scan(&n))
	return n
}

// TestKilledServerLosesNoBackgroundResponse: SIGKILL while a background turn is in flight;
// after a restart the response still ends completed or failed, charged at most once.
func TestKilledServerLosesNoBackgroundResponse(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	fake.Push(llmtest.Reply{Text: "never finished", Delay: time.Minute})
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)

	first := startServe(t, env)
	id := first.post(t, key, `{"input":"long job","background":true}`)["id"].(string)
	require.Eventually(t, func() bool { return len(fake.Requests()) == 1 }, 30*time.Second, 20*time.Millisecond, "the turn is in flight")
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))

	second := startServe(t, env)
	var status string
	require.Eventually(t, func() bool {
		status, _ = second.get(t, key, id)["status"].(string)
		return status == "completed" || status == "failed"
	}, 60*time.Second, 100*time.Millisecond)
	require.LessOrEqual(t, countRows(t, env["DATABASE_URL"], `SELECT count(*) FROM ledger`), 1, "charged at most once")
	require.Equal(t, 1, countRows(t, env["DATABASE_URL"], `SELECT count(*) FROM events WHERE type = 'meta_response.completed'`))
}

// TestTwoProcessesRunEachBackgroundTurnOnce: two serve processes on one database; every
// background turn runs exactly once, and an idempotent retry sent to the other replays.
func TestTwoProcessesRunEachBackgroundTurnOnce(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	a, b := startServe(t, env), startServe(t, env)

	var ids []string
	for i := 0; i < 10; i++ {
		p := a
		if i%2 == 1 {
			p = b
		}
		ids = append(ids, p.post(t, key, `{"input":"job","background":true}`)["id"].(string))
	}
	for _, id := range ids {
		require.Eventually(t, func() bool { return a.get(t, key, id)["status"] == "completed" }, 60*time.Second, 50*time.Millisecond)
	}
	require.Len(t, fake.Requests(), 10, "each background turn ran exactly once")

	first := a.post(t, key, `{"input":"pay"}`, "Idempotency-Key", "invoice-7")
	again := b.post(t, key, `{"input":"pay"}`, "Idempotency-Key", "invoice-7")
	require.Equal(t, first["id"], again["id"])
	require.Len(t, fake.Requests(), 11, "the retry on the other process replayed")
	require.Equal(t, 11, countRows(t, env["DATABASE_URL"], `SELECT count(*) FROM ledger`))
}

// TestSIGTERMDrainsPromptlyWithAnOpenFeed: an open event stream does not hold the drain.
func TestSIGTERMDrainsPromptlyWithAnOpenFeed(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	p := startServe(t, processEnv(t, fake, key))
	req, err := http.NewRequest(http.MethodGet, p.base+"/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err, "the feed ends cleanly")
	require.Eventually(t, func() bool { return strings.Contains(p.logs.String(), `"msg":"stopped"`) }, 20*time.Second, 50*time.Millisecond,
		"serve drained and stopped")
}
