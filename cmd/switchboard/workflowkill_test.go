package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/llm/llmtest"
)

// TestSIGKILLMidWorkflowRunResumesAtTheStep: a workflow run's second step is in flight when
// its server is SIGKILLed. Another server on the same database takes the run over within
// seconds (the dead replica's job is requeued) and resumes at that step: the first step,
// whose result was recorded, is not sent again; the interrupted one is sent again with the
// same Idempotency-Key, so its receiver can drop the copy; the run succeeds and
// `run.completed` is appended once.
func TestSIGKILLMidWorkflowRunResumesAtTheStep(t *testing.T) {
	t.Parallel()
	type hit struct{ path, key string }
	var (
		mu      sync.Mutex
		hits    []hit
		hold    = make(chan struct{})
		holding = make(chan struct{}, 1)
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, hit{r.URL.Path, r.Header.Get("Idempotency-Key")})
		n := 0
		for _, h := range hits {
			if h.path == "/second" {
				n++
			}
		}
		mu.Unlock()
		if r.URL.Path == "/second" && n == 1 {
			holding <- struct{}{}
			select { // the first /second never answers: its server dies meanwhile
			case <-hold:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer receiver.Close()
	defer close(hold)

	key, _, _ := apikey.New()
	env := processEnv(t, llmtest.NewAnthropic(t), key)
	env["WEBHOOK_ALLOW_PRIVATE"] = "1" // the receiver is on 127.0.0.1
	first := startServe(t, env)
	doc := "name: Two calls\ntrigger: {type: manual}\nsteps:\n" +
		"  - {id: one, type: http_request, url: \"" + receiver.URL + "/first\", body: \"a\"}\n" +
		"  - {id: two, type: http_request, url: \"" + receiver.URL + "/second\", body: \"b\"}\n"
	body, _ := json.Marshal(map[string]string{"document": doc})
	wf := apiCall(t, first, key, http.MethodPost, "/api/workflows", string(body))
	run := apiCall(t, first, key, http.MethodPost, "/api/workflows/"+wf["id"].(string)+"/runs", `{"input":{}}`)
	runID := run["id"].(string)

	select {
	case <-holding:
	case <-time.After(60 * time.Second):
		t.Fatal("the run's second step never reached the receiver")
	}
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))

	second := startServe(t, env)
	var status string
	require.Eventually(t, func() bool {
		status, _ = apiCall(t, second, key, http.MethodGet, "/api/runs/"+runID, "")["status"].(string)
		return status == "succeeded" || status == "failed"
	}, 90*time.Second, 200*time.Millisecond, "the run is taken over and ends")
	require.Equal(t, "succeeded", status)

	mu.Lock()
	defer mu.Unlock()
	var firsts, seconds []string
	for _, h := range hits {
		switch h.path {
		case "/first":
			firsts = append(firsts, h.key)
		case "/second":
			seconds = append(seconds, h.key)
		}
	}
	require.Len(t, firsts, 1, "a step whose result was recorded is not sent again")
	require.Len(t, seconds, 2, "the interrupted step is sent again")
	require.Equal(t, seconds[0], seconds[1], "with the same Idempotency-Key")
	require.Equal(t, runID+".two", seconds[0])
	require.Equal(t, 1, countRows(t, env["DATABASE_URL"], `SELECT count(*) FROM events WHERE type = 'run.completed'`))
}

// apiCall sends one /api request with the key and decodes its 2xx JSON answer.
func apiCall(t *testing.T, p *process, key, method, path, body string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, p.base+path, bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, 2, resp.StatusCode/100, "%s %s: %s", method, path, raw)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}
