package app_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/app"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/store"
)

// replica is a second process over the bundle's database, as another replica would be.
func (b *testBundle) replica(t *testing.T, change func(*app.Config)) *app.App {
	t.Helper()
	cfg := app.DefaultConfig()
	if change != nil {
		change(&cfg)
	}
	a, err := app.New(cfg, b.store, catalog.Default(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	return a
}

func startApp(t *testing.T, a *app.App) *httptest.Server {
	t.Helper()
	require.NoError(t, a.Start(context.Background()))
	ts := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		a.Hub.BeginShutdown() // open feeds end, as `serve` does before it drains
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, a.Stop(ctx))
	})
	return ts
}

func (b *testBundle) key(t *testing.T) (string, store.APIKey) {
	t.Helper()
	key, sum, display := apikey.New()
	k, err := b.store.CreateKey(context.Background(), b.workspace.ID, "member", sum, display)
	require.NoError(t, err)
	return key, k
}

// openFeed opens GET /v1/events and returns a channel closed when the feed ends. The feed
// is registered with its replica's hub before its headers reach the client.
func openFeed(t *testing.T, base, key string) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	return ended
}

// requireEnds waits (generously: this is no timing assertion) for a feed to end.
func requireEnds(t *testing.T, ended <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s is still open", what)
	}
}

// noFallback makes the periodic re-check of open streams too slow to matter, so that only
// the announcements can end them.
func noFallback(a *app.App) { a.Hub.LiveCheck = time.Hour }

// TestRevokingAKeyEndsItsFeedsOnEveryReplica: `keys revoke` (the store call the command
// makes) ends the key's open feeds on both replicas; another key's feed stays open.
func TestRevokingAKeyEndsItsFeedsOnEveryReplica(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	other := b.replica(t, nil)
	noFallback(b.app)
	noFallback(other)
	tsA, tsB := startApp(t, b.app), startApp(t, other)
	key, k := b.key(t)
	keep, _ := b.key(t)

	onA, onB := openFeed(t, tsA.URL, key), openFeed(t, tsB.URL, key)
	kept := openFeed(t, tsA.URL, keep)
	require.Equal(t, 2, b.app.Hub.Streams())

	_, err := b.store.RevokeKey(context.Background(), k.ID)
	require.NoError(t, err)
	requireEnds(t, onA, "the revoked key's feed on replica A")
	requireEnds(t, onB, "the revoked key's feed on replica B")
	select {
	case <-kept:
		t.Fatal("the feed of a key that was not revoked ended")
	default:
	}
	require.Equal(t, 1, b.app.Hub.Streams(), "the ended feed is no longer registered")

	resp := get(t, tsA.URL+"/v1/events", key)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "and the key opens no new one")
}

// TestSuspendingAWorkspaceEndsItsFeeds: `workspaces suspend` ends the open feeds of every
// key of the workspace, on every replica.
func TestSuspendingAWorkspaceEndsItsFeeds(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	other := b.replica(t, nil)
	noFallback(b.app)
	noFallback(other)
	tsA, tsB := startApp(t, b.app), startApp(t, other)
	one, _ := b.key(t)
	two, _ := b.key(t)
	onA, onB := openFeed(t, tsA.URL, one), openFeed(t, tsB.URL, two)

	_, err := b.store.SetWorkspaceStatus(context.Background(), b.workspace.Name, store.WorkspaceSuspended)
	require.NoError(t, err)
	requireEnds(t, onA, "a feed of the suspended workspace on replica A")
	requireEnds(t, onB, "a feed of the suspended workspace on replica B")
}

// TestARevocationWhoseAnnouncementWasLostStillEndsTheFeed: a key revoked without an
// announcement reaching the replica (here: revoked in SQL, announcing nothing) is found by
// the periodic re-check of open streams.
func TestARevocationWhoseAnnouncementWasLostStillEndsTheFeed(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.app.Hub.LiveCheck = 20 * time.Millisecond
	ts := startApp(t, b.app)
	key, k := b.key(t)
	feed := openFeed(t, ts.URL, key)
	_, err := b.store.Pool().Exec(context.Background(), `UPDATE api_keys SET revoked_at = now() WHERE id = $1`, k.ID)
	require.NoError(t, err)
	requireEnds(t, feed, "the feed of a key revoked silently")
}

func get(t *testing.T, url, key string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// stallingVendor speaks the Anthropic streaming protocol: it sends the first words of a
// reply and then nothing more until its caller gives up.
func stallingVendor(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range []string{
			`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
		} {
			typ := e[len(`{"type":"`):]
			typ = typ[:strings.IndexByte(typ, '"')]
			_, _ = io.WriteString(w, "event: "+typ+"\ndata: "+e+"\n\n")
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRevokingAKeyEndsItsStreamedTurns: a streamed chat completion in flight ends when its
// key is revoked through another replica, though the model has not finished.
func TestRevokingAKeyEndsItsStreamedTurns(t *testing.T) {
	t.Parallel()
	vendor := stallingVendor(t)
	b := setup(t, func(c *app.Config) {
		c.Families = map[string]llm.FamilyConfig{"alpha": {Protocol: "anthropic", BaseURL: vendor.URL, APIKey: "k"}}
	})
	noFallback(b.app)
	ts := startApp(t, b.app)
	key, k := b.key(t)

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "data: "), "the stream started: %q", first)

	_, err = b.store.RevokeKey(context.Background(), k.ID)
	require.NoError(t, err)
	ended := make(chan string)
	go func() {
		rest, _ := io.ReadAll(r)
		ended <- string(rest)
	}()
	select {
	case rest := <-ended:
		require.NotContains(t, rest, `"finish_reason":"stop"`, "the turn did not finish")
	case <-time.After(30 * time.Second):
		t.Fatal("the revoked key's stream is still open")
	}
}
