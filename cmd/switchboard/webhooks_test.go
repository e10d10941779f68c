package main

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/llm/llmtest"
)

// TestWebhooksListenPrintsSignedEvents runs `switchboard webhooks listen` against a running
// `switchboard serve` (development, private targets allowed, as `make run` starts it): a
// turn's events arrive signed and are printed, and SIGINT removes the endpoint.
func TestWebhooksListenPrintsSignedEvents(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	env["APP_ENV"] = "development"
	env["WEBHOOK_ALLOW_PRIVATE"] = "1"
	p := startServe(t, env)

	listen := exec.Command(switchboardBinary(t), "webhooks", "listen", "--server", p.base, "--events", "turn.completed,conversation.created")
	listen.Env = append(os.Environ(), "SWITCHBOARD_API_KEY="+key)
	var stdout, stderr syncBuffer
	listen.Stdout, listen.Stderr = &stdout, &stderr
	require.NoError(t, listen.Start())
	exited := make(chan error, 1)
	go func() { exited <- listen.Wait() }()
	t.Cleanup(func() {
		_ = listen.Process.Kill()
		if t.Failed() {
			t.Logf("listen stdout:\n%s\nlisten stderr:\n%s", stdout.String(), stderr.String())
		}
	})
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "Ready.") }, 30*time.Second, 20*time.Millisecond)
	require.Len(t, p.webhooks(t, key), 1, "the temporary endpoint is registered")
	require.Regexp(t, `with its secret whsec_…\S{4} \(--show-secret prints it in full\)`, stderr.String(), "the secret is masked")
	require.NotRegexp(t, fullSecret, stderr.String())

	fake.Push(llmtest.Reply{Text: "hello from the listener test"})
	p.post(t, key, `{"input":"hi"}`)
	require.Eventually(t, func() bool {
		out := stdout.String()
		return strings.Contains(out, "turn.completed") && strings.Contains(out, "conversation.created")
	}, 30*time.Second, 20*time.Millisecond, "both events are printed")
	out := stdout.String()
	require.Contains(t, out, "(signature verified)")
	require.Contains(t, out, `"reply_preview": "hello from the listener test"`, "the envelope is printed")
	require.NotContains(t, out, "spend.recorded", "only the subscribed types")

	require.NoError(t, listen.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		require.NoError(t, err, "a stopped listener exits cleanly")
	case <-time.After(30 * time.Second):
		t.Fatal("listen did not stop on SIGINT")
	}
	require.Contains(t, stderr.String(), "Removed endpoint whe-")
	require.Empty(t, p.webhooks(t, key), "the endpoint is removed on exit")

	// A listener killed outright cannot remove its endpoint; the next one does.
	// It also shows its secret in full, as asked.
	killed := exec.Command(switchboardBinary(t), "webhooks", "listen", "--server", p.base, "--key", key, "--show-secret")
	var killedErr syncBuffer
	killed.Stderr = &killedErr
	require.NoError(t, killed.Start())
	require.Eventually(t, func() bool { return strings.Contains(killedErr.String(), "Ready.") }, 30*time.Second, 20*time.Millisecond)
	require.Regexp(t, `with its secret `+fullSecret+`\.\n`, killedErr.String(), "--show-secret prints the secret in full")
	require.NoError(t, killed.Process.Kill())
	_ = killed.Wait()
	left := p.webhooks(t, key)
	require.Len(t, left, 1)
	next := exec.Command(switchboardBinary(t), "webhooks", "listen", "--server", p.base, "--key", key)
	var nextErr syncBuffer
	next.Stderr = &nextErr
	require.NoError(t, next.Start())
	t.Cleanup(func() { _ = next.Process.Kill(); _ = next.Wait() })
	require.Eventually(t, func() bool { return strings.Contains(nextErr.String(), "Ready.") }, 30*time.Second, 20*time.Millisecond)
	require.Contains(t, nextErr.String(), "Removed endpoint "+left[0].(map[string]any)["id"].(string)+" of an earlier listener")
	require.Len(t, p.webhooks(t, key), 1, "only the live listener's endpoint")
}

// TestWebhooksListenExplainsARefusedTarget: a server that keeps the private-address guard
// refuses the local endpoint, and the listener says how to allow it.
func TestWebhooksListenExplainsARefusedTarget(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	env["APP_ENV"] = "development"
	p := startServe(t, env)
	out, err := exec.Command(switchboardBinary(t), "webhooks", "listen", "--server", p.base, "--key", key).CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "WEBHOOK_ALLOW_PRIVATE=1")
}

// fullSecret matches a whole webhook secret: whsec_ and base64 of at least 24 bytes.
const fullSecret = `whsec_[A-Za-z0-9+/]{32,}=*`

// webhooks lists the workspace's webhook endpoints.
func (p *process) webhooks(t *testing.T, key string) []any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.base+"/v1/webhooks", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	return doJSON(t, req)["data"].([]any)
}
