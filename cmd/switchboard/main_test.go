package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/store/storetest"
)

type cli struct {
	t   *testing.T
	env map[string]string
}

func newCLI(t *testing.T) *cli {
	return &cli{t: t, env: map[string]string{"DATABASE_URL": storetest.NewURL(t), "DRAIN_DELAY": "10ms"}}
}

func (c *cli) getenv(name string) string { return c.env[name] }

// run runs a command and returns its stdout, stderr and error.
func (c *cli) run(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, c.getenv, &out, &errOut)
	return out.String(), errOut.String(), err
}

func (c *cli) must(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(args...)
	require.NoError(c.t, err, errOut)
	return out
}

func TestWorkspaceAndKeyCommands(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.must("migrate")

	require.Contains(t, c.must("workspaces", "create", "acme"), "balance_usd=5.00")
	_, _, err := c.run("workspaces", "create", "acme")
	require.ErrorContains(t, err, "already exists")

	key := strings.TrimSpace(c.must("keys", "create", "--workspace", "acme", "--role", "admin"))
	_, err = apikey.Hash(key)
	require.NoError(t, err, "stdout holds exactly the key")

	_, _, err = c.run("keys", "create", "--workspace", "acme", "--role", "root")
	require.ErrorAs(t, err, &usageError{})
	_, _, err = c.run("keys", "create", "--workspace", "nope")
	require.ErrorContains(t, err, `no workspace named "nope"`)

	list := c.must("keys", "list", "--workspace", "acme")
	require.Contains(t, list, "admin")
	require.Contains(t, list, apikey.Display(key))
	require.NotContains(t, list, key, "keys are shown once, never listed")
	id := strings.Fields(strings.Split(list, "\n")[1])[0]

	require.Contains(t, c.must("keys", "revoke", id), "revoked "+id)
	require.Contains(t, c.must("keys", "list", "--workspace", "acme"), "revoked 20")

	require.Contains(t, c.must("workspaces", "credit", "acme", "--usd", "2.5"), "balance_usd=7.50")
	require.Contains(t, c.must("workspaces", "credit", "acme", "--usd", "-7.5"), "balance_usd=0.00")
	require.Contains(t, c.must("workspaces", "cap", "acme", "--usd", "1.25"), "monthly_cap_usd=1.25  month_spend_usd=0.00")
	require.Contains(t, c.must("workspaces", "cap", "acme", "--clear"), "monthly_cap_usd=none")
	for _, bad := range [][]string{{"--usd", "0"}, {"--usd", "-1"}, {"--usd", "lots"}, {}, {"--usd", "1", "--clear"}} {
		_, _, err = c.run(append([]string{"workspaces", "cap", "acme"}, bad...)...)
		require.ErrorAs(t, err, &usageError{}, "%v", bad)
	}
	_, _, err = c.run("workspaces", "cap", "nope", "--usd", "1")
	require.ErrorContains(t, err, `no workspace named "nope"`)
	require.Contains(t, c.must("workspaces", "suspend", "acme"), "status=suspended")
	require.Contains(t, c.must("workspaces", "resume", "acme"), "status=active")
	_, _, err = c.run("workspaces", "credit", "acme", "--usd", "lots")
	require.ErrorAs(t, err, &usageError{})
}

func TestStartingCreditComesFromTheEnvironment(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.must("migrate")
	c.env["WORKSPACE_STARTING_CREDIT_USD"] = "12.345"
	require.Contains(t, c.must("workspaces", "create", "rich"), "balance_usd=12.345")
	c.env["WORKSPACE_STARTING_CREDIT_USD"] = "-1"
	_, _, err := c.run("workspaces", "create", "poor")
	require.ErrorContains(t, err, "WORKSPACE_STARTING_CREDIT_USD")
}

func TestConfigurationErrorsAreClear(t *testing.T) {
	t.Parallel()
	for name, env := range map[string]map[string]string{
		"no database":  {},
		"bad app env":  {"DATABASE_URL": "postgres://x", "APP_ENV": "staging"},
		"bad rpm":      {"DATABASE_URL": "postgres://x", "RATE_LIMIT_KEY_RPM": "0"},
		"bad boot key": {"DATABASE_URL": "postgres://x", "BOOTSTRAP_API_KEY": "hunter2"},
	} {
		c := &cli{t: t, env: env}
		_, _, err := c.run("migrate")
		require.Error(t, err, name)
	}
}

// TestServeBootstrapsAndDrains starts the real serve command twice on one database with
// BOOTSTRAP_API_KEY set: the key works, the seed is idempotent, and cancelling drains.
func TestServeBootstrapsAndDrains(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	key, _, _ := apikey.New()
	c.env["BOOTSTRAP_API_KEY"] = key
	for round := 0; round < 2; round++ {
		addr := freeAddr(t)
		c.env["ADDR"] = addr
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"serve"}, c.getenv, io.Discard, io.Discard) }()
		waitHealthy(t, "http://"+addr)

		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "round %d", round)

		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop after its context ended")
		}
	}
	require.Equal(t, 1, strings.Count(c.must("keys", "list", "--workspace", "default"), "owner"))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// waitHealthy waits until the server answers /health with 200: it polls the condition until a
// deadline, so a server that never comes up fails the test instead of hanging it.
func waitHealthy(t *testing.T, base string) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 20*time.Millisecond, "%s/health never answered 200", base)
}
