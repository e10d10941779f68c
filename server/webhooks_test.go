package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

// receiver is a local webhook receiver that records deliveries and answers with the
// statuses it is given, in order (200 once they run out).
type receiver struct {
	*httptest.Server
	mu         sync.Mutex
	deliveries []delivery
	statuses   []int
}

type delivery struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.deliveries = append(r.deliveries, delivery{header: req.Header.Clone(), body: body})
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.deliveries...)
}

type endpoint struct {
	ID          string   `json:"id"`
	Object      string   `json:"object"`
	URL         string   `json:"url"`
	EventTypes  []string `json:"event_types"`
	Description *string  `json:"description"`
	Enabled     bool     `json:"enabled"`
	Secret      string   `json:"secret"`
}

func (b *testBundle) createEndpoint(t *testing.T, body string) endpoint {
	t.Helper()
	resp, raw := b.do(t, http.MethodPost, "/v1/webhooks", "Bearer "+b.key, body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var e endpoint
	require.NoError(t, json.Unmarshal(raw, &e))
	return e
}

func (b *testBundle) chatTurn(t *testing.T) {
	t.Helper()
	resp, raw := b.do(t, http.MethodPost, "/v1/chat/completions", "Bearer "+b.key, `{"model":"beta-5.4","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
}

func TestWebhookEndpointCRUD(t *testing.T) {
	t.Parallel()
	b := setup(t)
	auth := "Bearer " + b.key
	e := b.createEndpoint(t, `{"url":"https://hooks.example.com/in","description":"ops"}`)
	require.True(t, strings.HasPrefix(e.ID, "whe-"))
	require.True(t, strings.HasPrefix(e.Secret, "whsec_"))
	require.Equal(t, []string{"*"}, e.EventTypes, "all types by default")
	require.True(t, e.Enabled)

	for _, path := range []string{"/v1/webhooks/" + e.ID, "/v1/webhooks"} {
		_, raw := b.get(t, path)
		require.NotContains(t, string(raw), "secret", "reads never return the secret")
		require.NotContains(t, string(raw), e.Secret)
	}
	var id string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT id::text FROM webhook_endpoints`).Scan(&id))
	resp, _ := b.get(t, "/v1/webhooks/"+id)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the UUID is accepted in paths")

	resp, raw := b.do(t, http.MethodPatch, "/v1/webhooks/"+e.ID, auth, `{"event_types":["turn.completed","turn.completed"],"description":"night shift","enabled":false}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var patched endpoint
	require.NoError(t, json.Unmarshal(raw, &patched))
	require.Equal(t, []string{"turn.completed"}, patched.EventTypes)
	require.Equal(t, "night shift", *patched.Description)
	require.False(t, patched.Enabled)

	b.createEndpoint(t, `{"url":"https://hooks.example.com/second","event_types":["spend.recorded"]}`)
	_, raw = b.get(t, "/v1/webhooks?limit=1")
	var list struct{ Data []endpoint }
	require.NoError(t, json.Unmarshal(raw, &list))
	require.Len(t, list.Data, 1)
	require.Equal(t, "https://hooks.example.com/second", list.Data[0].URL, "newest first")

	ws2, err := b.store.CreateWorkspace(context.Background(), "rival", 1_000_000_000)
	require.NoError(t, err)
	rival := "Bearer " + b.newKey(t, ws2, "owner")
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		resp, raw := b.do(t, method, "/v1/webhooks/"+e.ID, rival, "")
		require.Equal(t, "webhook_endpoint_not_found", str(errorOf(t, resp, raw, http.StatusNotFound).Code))
	}
	_, raw = b.do(t, http.MethodGet, "/v1/webhooks", rival, "")
	require.JSONEq(t, `{"object":"list","data":[]}`, string(raw))

	resp, _ = b.do(t, http.MethodDelete, "/v1/webhooks/"+e.ID, auth, "")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, raw = b.get(t, "/v1/webhooks/"+e.ID)
	errorOf(t, resp, raw, http.StatusNotFound)

	resp, raw = b.do(t, http.MethodPatch, "/v1/webhooks/"+patched.ID, auth, `{"secret":"mine"}`)
	require.Equal(t, "secret", str(errorOf(t, resp, raw, http.StatusBadRequest).Param), "unknown fields are refused on webhooks")
}

func TestWebhookURLsMustBePublicHTTPS(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.allowPrivate = false })
	for _, url := range []string{
		"http://hooks.example.com/in", "https://127.0.0.1/in", "https://localhost/in", "https://10.1.2.3/in",
		"https://172.20.0.1/in", "https://192.168.0.10/in", "https://169.254.169.254/latest", "https://[::1]/in",
		"https://[fe80::1]/in", "https://100.64.1.1/in", "https://[fc00::5]/in", "https://0.0.0.0/in", "https://[::ffff:10.0.0.1]/in",
		"https://[::1%25lo]:8443/in", "https://[fe80::1%25eth0]/in", "https://[fd00:ec2::254%25eth0]/latest/meta-data/", // issue 10
	} {
		resp, raw := b.do(t, http.MethodPost, "/v1/webhooks", "Bearer "+b.key, `{"url":"`+url+`"}`)
		e := errorOf(t, resp, raw, http.StatusBadRequest)
		require.Equal(t, "url", str(e.Param), url)
		require.Equal(t, "url_not_allowed", str(e.Code), url)
	}
	require.Zero(t, b.count(t, "webhook_endpoints"), "nothing is written")
	b.createEndpoint(t, `{"url":"https://93.184.216.34/in"}`)
	resp, raw := b.do(t, http.MethodPatch, "/v1/webhooks/"+b.createEndpoint(t, `{"url":"https://93.184.216.34/x"}`).ID, "Bearer "+b.key, `{"url":"https://10.0.0.1/in"}`)
	require.Equal(t, "url", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))
}

// An endpoint whose name resolved to a public address when it was registered but points
// inside when the delivery is made (DNS rebinding) is refused at dial time.
func TestDeliveryRefusesPrivateAddressesAtDialTime(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.allowPrivate = false })
	r := newReceiver(t)
	_, err := b.store.Pool().Exec(context.Background(),
		`INSERT INTO webhook_endpoints (workspace_id, short_id, url, event_types, secret) VALUES ($1, 'whe-rebound', $2, '{*}', 'whsec_MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIz')`,
		b.workspace.ID, r.URL)
	require.NoError(t, err)
	b.chatTurn(t)
	require.Eventually(t, func() bool { return b.count(t, "webhook_attempts") >= 2 }, 30*time.Second, 50*time.Millisecond)
	var msg string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT error FROM webhook_attempts LIMIT 1`).Scan(&msg))
	require.Equal(t, "blocked_address", msg, "a class, no address or port")
	require.Empty(t, r.got(), "the receiver on loopback is never reached")
}

func TestTurnEventsAreDeliveredSignedAndVerifiable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	all := newReceiver(t)
	onlySpend := newReceiver(t)
	e := b.createEndpoint(t, `{"url":"`+all.URL+`/hook"}`)
	b.createEndpoint(t, `{"url":"`+onlySpend.URL+`/hook","event_types":["spend.recorded"]}`)

	resp, raw := b.do(t, http.MethodPost, "/v1/responses", "Bearer "+b.key, `{"input":"hello"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Eventually(t, func() bool { return len(all.got()) == 3 && len(onlySpend.got()) == 1 }, 30*time.Second, 20*time.Millisecond)

	verifier, err := standardwebhooks.NewWebhook(e.Secret)
	require.NoError(t, err)
	var types []string
	for _, d := range all.got() {
		require.NoError(t, verifier.Verify(d.body, d.header), "the reference library verifies the signature")
		var env struct {
			ID, Type string
		}
		require.NoError(t, json.Unmarshal(d.body, &env))
		require.Equal(t, env.ID, d.header.Get("webhook-id"))
		types = append(types, env.Type)
		var stored string
		require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT envelope FROM events WHERE short_id = $1`, env.ID).Scan(&stored))
		require.Equal(t, stored, string(d.body), "the body is the stored envelope, byte for byte")
	}
	require.ElementsMatch(t, []string{"conversation.created", "turn.completed", "spend.recorded"}, types)
	tampered := append([]byte(nil), all.got()[0].body...)
	tampered[len(tampered)-2] ^= 1
	require.Error(t, verifier.Verify(tampered, all.got()[0].header))
}

func TestFailedDeliveriesAreRetriedWithTheSameID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := newReceiver(t, http.StatusInternalServerError, http.StatusBadGateway)
	e := b.createEndpoint(t, `{"url":"`+r.URL+`","event_types":["turn.completed"]}`)
	b.chatTurn(t)
	require.Eventually(t, func() bool { return len(r.got()) == 3 }, 60*time.Second, 20*time.Millisecond)
	got := r.got()
	for _, d := range got[1:] {
		require.Equal(t, got[0].header.Get("webhook-id"), d.header.Get("webhook-id"))
		require.Equal(t, string(got[0].body), string(d.body))
	}

	// The receiver answers before the attempt is recorded: wait for the third row.
	var attempts struct {
		Data []struct {
			Attempt      int
			Succeeded    bool
			ResponseCode *int `json:"response_code"`
		}
	}
	require.Eventually(t, func() bool {
		_, raw := b.get(t, "/v1/webhooks/"+e.ID+"/attempts")
		require.NoError(t, json.Unmarshal(raw, &attempts))
		return len(attempts.Data) == 3
	}, 30*time.Second, 20*time.Millisecond)
	require.True(t, attempts.Data[0].Succeeded)
	require.Equal(t, 3, attempts.Data[0].Attempt)
	require.Equal(t, 502, *attempts.Data[1].ResponseCode)
	require.Equal(t, 500, *attempts.Data[2].ResponseCode)
	require.Eventually(t, func() bool { return b.deliveriesSettled(t) }, 30*time.Second, 20*time.Millisecond)
	require.Len(t, r.got(), 3, "a delivered event is not sent again")
}

func TestFailingEndpointIsDisabledThenReenabled(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.disableAfter = 2 })
	r := newReceiver(t, 500, 500, 500, 500, 500, 500)
	e := b.createEndpoint(t, `{"url":"`+r.URL+`","event_types":["turn.completed"]}`)
	b.chatTurn(t)
	require.Eventually(t, func() bool {
		_, raw := b.get(t, "/v1/webhooks/"+e.ID)
		return !strings.Contains(string(raw), `"enabled":true`)
	}, 60*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return b.deliveriesSettled(t) }, 30*time.Second, 20*time.Millisecond)
	require.Len(t, r.got(), 2, "no delivery after the endpoint is disabled")

	resp, raw := b.do(t, http.MethodPatch, "/v1/webhooks/"+e.ID, "Bearer "+b.key, `{"enabled":true}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var failures int
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT consecutive_failures FROM webhook_endpoints`).Scan(&failures))
	require.Zero(t, failures, "re-enabling clears the failure state")

	// The redelivery extension sends an event again; the receiver now accepts.
	r.mu.Lock()
	r.statuses = nil
	r.mu.Unlock()
	var eventID string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT short_id FROM events WHERE type = 'turn.completed'`).Scan(&eventID))
	resp, raw = b.do(t, http.MethodPost, "/v1/webhooks/"+e.ID+"/redeliver", "Bearer "+b.key, `{"event_id":"`+eventID+`"}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode, string(raw))
	require.Eventually(t, func() bool { return len(r.got()) == 3 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, eventID, r.got()[2].header.Get("webhook-id"))
}

// deliveriesSettled reports that no webhook delivery job is left to run: from then on,
// nothing more can reach a receiver, so its count of deliveries is final.
func (b *testBundle) deliveriesSettled(t *testing.T) bool {
	t.Helper()
	var n int
	require.NoError(t, b.store.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM river_job WHERE kind = 'webhook_delivery' AND state NOT IN ('completed', 'discarded', 'cancelled')`).Scan(&n))
	return n == 0
}
