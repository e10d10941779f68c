package main

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"switchboard/apikey"
	"switchboard/llm/llmtest"
)

// otlpSink is an in-process OTLP/HTTP receiver: it keeps every span it is sent.
type otlpSink struct {
	mu    sync.Mutex
	spans map[string]sunkSpan // by span id
}

type sunkSpan struct {
	name, trace, parent string
	attrs               map[string]string
}

func newOTLPSink(t *testing.T) (*otlpSink, string) {
	s := &otlpSink{spans: map[string]sunkSpan{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					attrs := map[string]string{}
					for _, kv := range sp.Attributes {
						attrs[kv.Key] = kv.Value.GetStringValue()
					}
					s.spans[hex.EncodeToString(sp.SpanId)] = sunkSpan{name: sp.Name, trace: hex.EncodeToString(sp.TraceId),
						parent: hex.EncodeToString(sp.ParentSpanId), attrs: attrs}
				}
			}
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write([]byte{})
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// chain is the names from the span named leaf (the first in trace) up to its root.
func (s *otlpSink) chain(trace, leaf string) ([]string, sunkSpan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range s.spans {
		if sp.name != leaf || (trace != "" && sp.trace != trace) {
			continue
		}
		names := []string{sp.name}
		for sp.parent != "" {
			parent, ok := s.spans[sp.parent]
			if !ok {
				return append(names, "(missing)"), sp
			}
			sp = parent
			names = append(names, sp.name)
		}
		return names, sp
	}
	return nil, sunkSpan{}
}

// TestTracesLinkRequestTurnAndVendorCall: with OTEL_EXPORTER_OTLP_ENDPOINT, one turn's spans
// reach the collector linked from the request (with its request id) through the turn to the
// vendor call; a background turn's continue the request's trace through the job.
func TestTracesLinkRequestTurnAndVendorCall(t *testing.T) {
	t.Parallel()
	sink, url := newOTLPSink(t)
	fake := llmtest.NewAnthropic(t)
	key, _, _ := apikey.New()
	env := processEnv(t, fake, key)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = url
	env["OTEL_BSP_SCHEDULE_DELAY"] = "50"
	p := startServe(t, env)

	req, err := http.NewRequest(http.MethodPost, p.base+"/v1/responses", strings.NewReader(`{"input":"hello"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	requestID := resp.Header.Get("X-Request-Id")

	var names []string
	var root sunkSpan
	require.Eventually(t, func() bool {
		names, root = sink.chain("", "vendor call")
		return root.name == "POST /v1/responses"
	}, 20*time.Second, 50*time.Millisecond, "chain %v", names)
	require.Equal(t, []string{"vendor call", "turn", "POST /v1/responses"}, names)
	require.Equal(t, requestID, root.attrs["switchboard.request_id"])

	id := p.post(t, key, `{"input":"later","background":true}`)["id"].(string)
	require.Eventually(t, func() bool { return p.get(t, key, id)["status"] == "completed" }, 30*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		sink.mu.Lock()
		traces := map[string]bool{}
		for _, sp := range sink.spans {
			if sp.name == "job background_response" {
				traces[sp.trace] = true
			}
		}
		sink.mu.Unlock()
		for trace := range traces {
			if names, root = sink.chain(trace, "vendor call"); root.name == "POST /v1/responses" {
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, []string{"vendor call", "turn", "job background_response", "POST /v1/responses"}, names)
}
