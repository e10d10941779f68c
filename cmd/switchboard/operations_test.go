package main

import (
	"net/http"
	"strings"
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
	require.Equal(t, http.StatusServiceUnavailable, a.status(t, "", "/ready"), "Redis is a dependency of readiness")
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
