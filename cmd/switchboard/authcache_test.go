package main

import (
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/llm/llmtest"
)

// runCLI runs `switchboard ARGS...` on the database of env and returns its stdout and stderr.
func runCLI(t *testing.T, env map[string]string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(switchboardBinary(t), args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+env["DATABASE_URL"])
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	return stdout.String(), stderr.String()
}

// within polls until both replicas answer path with want, and fails if that takes longer
// than limit.
func within(t *testing.T, limit time.Duration, key, path string, want int, ps ...*process) {
	t.Helper()
	start := time.Now()
	for _, p := range ps {
		for {
			code := p.status(t, key, path)
			if code == want {
				break
			}
			require.Less(t, time.Since(start), limit, "%s still answers %d, want %d", p.base, code, want)
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Logf("%s %d on both replicas after %s", path, want, time.Since(start).Round(time.Millisecond))
}

// TestCachedKeysFollowRevocationsOnEveryReplica: with keys cached for a minute, a revocation,
// a suspension and credit used up, each made by a third process (the CLI), take effect on
// both replicas within a second (LISTEN/NOTIFY); lifting a refusal takes effect at once.
func TestCachedKeysFollowRevocationsOnEveryReplica(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	owner, _, _ := apikey.New()
	env := processEnv(t, fake, owner)
	env["AUTH_CACHE_TTL"] = "60s"
	a, b := startServe(t, env), startServe(t, env)

	member, created := runCLI(t, env, "keys", "create", "--workspace", "default", "--role", "member")
	member = strings.TrimSpace(member)
	id := regexp.MustCompile(`created key (\S+)`).FindStringSubmatch(created)
	require.Len(t, id, 2, created)
	for _, p := range []*process{a, b} {
		for _, k := range []string{owner, member} {
			require.Equal(t, http.StatusOK, p.status(t, k, "/v1/models")) // now cached
		}
	}

	runCLI(t, env, "keys", "revoke", id[1])
	within(t, time.Second, member, "/v1/models", http.StatusUnauthorized, a, b)
	require.Equal(t, http.StatusOK, a.status(t, owner, "/v1/models"), "the other key of the workspace still works")

	runCLI(t, env, "workspaces", "suspend", "default")
	within(t, time.Second, owner, "/v1/models", http.StatusForbidden, a, b)
	runCLI(t, env, "workspaces", "resume", "default")
	within(t, 0, owner, "/v1/models", http.StatusOK, a, b) // at once: refusals are never cached

	out, _ := runCLI(t, env, "workspaces", "credit", "default", "--usd", "0")
	balance := regexp.MustCompile(`balance_usd=(\S+)`).FindStringSubmatch(out)
	require.Len(t, balance, 2, out)
	runCLI(t, env, "workspaces", "credit", "default", "--usd", "-"+balance[1])
	within(t, time.Second, owner, "/v1/models", http.StatusForbidden, a, b)
	runCLI(t, env, "workspaces", "credit", "default", "--usd", "5")
	within(t, 0, owner, "/v1/models", http.StatusOK, a, b)
}
