package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/llm/llmtest"
)

type respObj struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"`
	Output       []any           `json:"output"`
	OutputText   string          `json:"output_text"`
	Background   bool            `json:"background"`
	Error        *apiError       `json:"error"`
	Usage        json.RawMessage `json:"usage"`
	Conversation string          `json:"x_svc_conversation"`
}

func (b *testBundle) createResponse(t *testing.T, base, body string, header ...string) (*http.Response, respObj) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/responses", stringsReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var r respObj
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	}
	return resp, r
}

func (b *testBundle) waitFinished(t *testing.T, id string) respObj {
	t.Helper()
	var r respObj
	require.Eventually(t, func() bool {
		_, raw := b.get(t, "/v1/responses/"+id)
		require.NoError(t, json.Unmarshal(raw, &r))
		return r.Status == "completed" || r.Status == "failed"
	}, 30*time.Second, 20*time.Millisecond)
	return r
}

// metaEvents returns the data of the workspace's meta_response.completed events.
func (b *testBundle) metaEvents(t *testing.T) []map[string]any {
	t.Helper()
	rows, err := b.store.Pool().Query(context.Background(), `SELECT envelope FROM events WHERE type = 'meta_response.completed' ORDER BY seq`)
	require.NoError(t, err)
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var env string
		require.NoError(t, rows.Scan(&env))
		var e struct{ Data map[string]any }
		require.NoError(t, json.Unmarshal([]byte(env), &e))
		out = append(out, e.Data)
	}
	return out
}

func TestBackgroundResponseIsQueuedThenCompleted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := b.vendors[catalog.Alpha]
	fake.Push(llmtest.Reply{Text: "done in the background", Delay: 300 * time.Millisecond})
	resp, r := b.createResponse(t, b.url, `{"input":"work on it","background":true}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "queued", r.Status)
	require.Empty(t, r.Output)
	require.True(t, r.Background)

	_, raw := b.get(t, "/v1/responses/"+r.ID)
	var shell respObj
	require.NoError(t, json.Unmarshal(raw, &shell))
	require.Contains(t, []string{"queued", "in_progress"}, shell.Status, "a schema-valid shell until it ends")
	require.Empty(t, shell.Output)

	done := b.waitFinished(t, r.ID)
	require.Equal(t, "completed", done.Status)
	require.Equal(t, "done in the background", done.OutputText)
	require.NotEmpty(t, done.Usage)
	require.Len(t, fake.Requests(), 1)
	require.Equal(t, 1, b.count(t, "ledger"))

	meta := b.metaEvents(t)
	require.Len(t, meta, 1)
	require.Equal(t, map[string]any{"responseId": r.ID, "conversationId": done.Conversation, "status": "completed"}, meta[0])

	// It can be continued like any stored response.
	resp, next := b.createResponse(t, b.url, `{"input":"and then?","previous_response_id":"`+r.ID+`"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, done.Conversation, next.Conversation)
}

func TestBackgroundFailureIsStoredAndAnnounced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.vendors[catalog.Alpha].Push(llmtest.Reply{Status: http.StatusServiceUnavailable})
	_, r := b.createResponse(t, b.url, `{"input":"x","background":true}`)
	done := b.waitFinished(t, r.ID)
	require.Equal(t, "failed", done.Status)
	require.NotNil(t, done.Error)
	require.Equal(t, "server_error", str(done.Error.Code), "the reference API's closed list of codes")
	require.Contains(t, done.Error.Message, "(upstream_error)", "the internal reason stays in the message")
	require.Equal(t, "failed", b.metaEvents(t)[0]["status"])

	resp, raw := b.do(t, http.MethodPost, "/v1/responses", "Bearer "+b.key, `{"input":"x","background":true,"stream":true}`)
	require.Equal(t, "stream", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))
}

func TestIdempotencyKeyReplaysWithoutRunningAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := b.vendors[catalog.Beta]
	resp, first := b.createResponse(t, b.url, `{"model":"beta-5.4","input":"charge me once","metadata":{"a":1,"b":2}}`, "Idempotency-Key", "order-42")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, again := b.createResponse(t, b.url, `{ "metadata": {"b":2, "a":1}, "input": "charge me once",  "model": "beta-5.4" }`, "Idempotency-Key", "order-42")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first, again, "the stored response comes back")
	require.Len(t, fake.Requests(), 1, "the model is not called again")
	require.Equal(t, 1, b.count(t, "ledger"), "nor charged again")

	req, _ := http.NewRequest(http.MethodPost, b.url+"/v1/responses", stringsReader(`{"model":"beta-5.4","input":"another body"}`))
	req.Header.Set("Authorization", "Bearer "+b.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "order-42")
	res, err := b.client.Do(req)
	require.NoError(t, err)
	body := readAll(t, res)
	e := errorOf(t, res, body, http.StatusUnprocessableEntity)
	require.Equal(t, "idempotency_key_reused", str(e.Code))

	// Keys belong to a workspace: another workspace's request with the same key runs.
	ws2, err := b.store.CreateWorkspace(context.Background(), "other", 1_000_000_000)
	require.NoError(t, err)
	other := *b
	other.key = b.newKey(t, ws2, "member")
	resp, theirs := other.createResponse(t, b.url, `{"model":"beta-5.4","input":"charge me once","metadata":{"a":1,"b":2}}`, "Idempotency-Key", "order-42")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotEqual(t, first.ID, theirs.ID)
}

func TestConcurrentRequestsWithOneKeyRunOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := b.vendors[catalog.Alpha]
	fake.Push(llmtest.Reply{Text: "slow answer", Delay: 400 * time.Millisecond})
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, r := b.createResponse(t, b.url, `{"input":"once"}`, "Idempotency-Key", "same")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			ids[i] = r.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id)
	}
	require.Len(t, fake.Requests(), 1)
}

func TestExpiredIdempotencyKeysAreSweptAndReusable(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) {
		o.idempotencyRetention = 50 * time.Millisecond
		o.responseTTL = 400 * time.Millisecond
	})
	_, first := b.createResponse(t, b.url, `{"input":"a"}`, "Idempotency-Key", "k")
	require.Eventually(t, func() bool { return b.count(t, "idempotency_keys") == 0 }, 10*time.Second, 20*time.Millisecond)
	resp, second := b.createResponse(t, b.url, `{"input":"a different body is fine now"}`, "Idempotency-Key", "k")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotEqual(t, first.ID, second.ID)
}

func TestTwoReplicasRunEachBackgroundTurnOnceAndShareKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, other := b.replica(t)
	var ids []string
	for i := 0; i < 12; i++ {
		base := b.url
		if i%2 == 1 {
			base = other
		}
		resp, r := b.createResponse(t, base, `{"model":"gamma-v4-flash","input":"job","background":true}`)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		ids = append(ids, r.ID)
	}
	for _, id := range ids {
		require.Equal(t, "completed", b.waitFinished(t, id).Status)
	}
	require.Len(t, b.vendors[catalog.Gamma].Requests(), 12, "each background turn ran exactly once")
	require.Equal(t, 12, b.count(t, "ledger"))

	_, first := b.createResponse(t, b.url, `{"model":"gamma-v4-flash","input":"idem"}`, "Idempotency-Key", "cross")
	resp, again := b.createResponse(t, other, `{"model":"gamma-v4-flash","input":"idem"}`, "Idempotency-Key", "cross")
	require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first.ID, again.ID, "a retry sent to the other replica replays")
	require.Len(t, b.vendors[catalog.Gamma].Requests(), 13)
}
