package tracing_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonv1 "go.opentelemetry.io/proto/otlp/common/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"switchboard/tracing"
)

// otlpSink is an in-process OTLP/HTTP receiver (the collector, faked at the wire): it keeps
// every span the exporter sends.
type otlpSink struct {
	mu    sync.Mutex
	spans []sunkSpan
}

type sunkSpan struct {
	name, trace, id, parent string
	kind                    tracev1.Span_SpanKind
	status                  tracev1.Status_StatusCode
	attrs                   map[string]any
	events                  []string
}

// newTracing returns a Tracing exporting to a new sink. The exporter reads the standard
// OTEL_* variables, so the tests that use it do not run in parallel.
func newTracing(t *testing.T) (*tracing.Tracing, *otlpSink) {
	s := &otlpSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					attrs := map[string]any{}
					for _, kv := range sp.Attributes {
						switch v := kv.Value.GetValue().(type) {
						case *commonv1.AnyValue_IntValue:
							attrs[kv.Key] = v.IntValue
						case *commonv1.AnyValue_StringValue:
							attrs[kv.Key] = v.StringValue
						}
					}
					var events []string
					for _, e := range sp.Events {
						events = append(events, e.Name)
					}
					s.spans = append(s.spans, sunkSpan{name: sp.Name, trace: hex.EncodeToString(sp.TraceId), id: hex.EncodeToString(sp.SpanId),
						parent: hex.EncodeToString(sp.ParentSpanId), kind: sp.Kind, status: sp.GetStatus().GetCode(), attrs: attrs, events: events})
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(srv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	tr, err := tracing.New(context.Background())
	require.NoError(t, err)
	return tr, s
}

// flushed exports what the tracer buffered and returns the spans by name.
func (s *otlpSink) flushed(t *testing.T, tr *tracing.Tracing) map[string]sunkSpan {
	t.Helper()
	require.NoError(t, tr.Shutdown(context.Background()))
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]sunkSpan{}
	for _, sp := range s.spans {
		out[sp.name] = sp
	}
	return out
}

func TestEnabled(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	require.False(t, tracing.Enabled(env(nil)))
	require.True(t, tracing.Enabled(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})))
	require.True(t, tracing.Enabled(env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})))
	require.False(t, tracing.Enabled(env(map[string]string{"OTEL_SERVICE_NAME": "x"})), "a service name alone asks for nothing")
}

func TestANilTracingDoesNothing(t *testing.T) {
	t.Parallel()
	var tr *tracing.Tracing
	require.NoError(t, tr.Shutdown(context.Background()))
}

const (
	incomingTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingSpan  = "00f067aa0ba902b7"
)

// TestEachRequestIsAServerSpanContinuingItsCaller: the span is named by the route template,
// continues an incoming traceparent, and records the request id and the status written; a
// 5xx is an error.
func TestEachRequestIsAServerSpanContinuingItsCaller(t *testing.T) {
	tr, sink := newTracing(t)
	e := echo.New()
	e.Use(middleware.RequestID(), tr.Echo())
	var inner trace.SpanContext
	e.GET("/api/agents/:id", func(c echo.Context) error {
		inner = trace.SpanContextFromContext(c.Request().Context())
		return c.String(http.StatusOK, "ok")
	})
	e.POST("/api/broken", func(c echo.Context) error { return c.String(http.StatusServiceUnavailable, "down") })
	srv := httptest.NewServer(e)
	defer srv.Close()

	req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/agents/42", nil)
	require.NoError(t, err)
	req.Header.Set("traceparent", "00-"+incomingTrace+"-"+incomingSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	requestID := resp.Header.Get(echo.HeaderXRequestID)
	require.NoError(t, resp.Body.Close())
	resp, err = http.Post(srv.URL+"/api/broken", "text/plain", nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	resp, err = http.Get(srv.URL + "/nowhere")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())

	spans := sink.flushed(t, tr)
	get := spans["GET /api/agents/:id"]
	require.Equal(t, incomingTrace, get.trace, "the caller's trace goes on")
	require.Equal(t, incomingSpan, get.parent)
	require.Equal(t, get.id, inner.SpanID().String(), "the handler runs inside the span")
	require.Equal(t, tracev1.Span_SPAN_KIND_SERVER, get.kind)
	require.Equal(t, "/api/agents/:id", get.attrs["http.route"])
	require.Equal(t, "GET", get.attrs["http.request.method"])
	require.Equal(t, int64(200), get.attrs["http.response.status_code"])
	require.NotEmpty(t, requestID)
	require.Equal(t, requestID, get.attrs["switchboard.request_id"])
	require.Equal(t, tracev1.Status_STATUS_CODE_UNSET, get.status)

	broken := spans["POST /api/broken"]
	require.NotEqual(t, incomingTrace, broken.trace, "no traceparent: a new trace")
	require.Empty(t, broken.parent)
	require.Equal(t, int64(503), broken.attrs["http.response.status_code"])
	require.Equal(t, tracev1.Status_STATUS_CODE_ERROR, broken.status)

	require.Contains(t, spans, "GET unmatched", "an unrouted request is named so, not by its path")
}

// TestAJobContinuesTheTraceThatInsertedIt: the insert middleware stores the trace context in
// the job's metadata (keeping what else is there), and the worker middleware makes the job
// a consumer span of that trace, wherever it runs.
func TestAJobContinuesTheTraceThatInsertedIt(t *testing.T) {
	tr, sink := newTracing(t)
	ctx, request := tr.Start(context.Background(), "POST /api/things", trace.SpanKindServer)
	params := []*rivertype.JobInsertParams{
		{Kind: "crawl", Metadata: []byte(`{"priority":"high"}`)},
		{Kind: "mail"},
		{Kind: "odd", Metadata: []byte(`not json`)},
	}
	_, err := tr.InsertMiddleware().InsertMany(ctx, params, func(context.Context) ([]*rivertype.JobInsertResult, error) { return nil, nil })
	require.NoError(t, err)
	request.End()

	var crawl map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(params[0].Metadata, &crawl))
	require.JSONEq(t, `"high"`, string(crawl["priority"]), "the job's own metadata is kept")
	var carried map[string]string
	require.NoError(t, json.Unmarshal(crawl["otel"], &carried))
	require.Contains(t, carried["traceparent"], request.SpanContext().TraceID().String())
	require.Contains(t, string(params[1].Metadata), "traceparent")
	require.Equal(t, "not json", string(params[2].Metadata), "metadata that is not ours to repair is left alone")

	// Untraced inserts carry nothing.
	plain := []*rivertype.JobInsertParams{{Kind: "mail"}}
	_, err = tr.InsertMiddleware().InsertMany(context.Background(), plain, func(context.Context) ([]*rivertype.JobInsertResult, error) { return nil, nil })
	require.NoError(t, err)
	require.Empty(t, plain[0].Metadata)

	var inner trace.SpanContext
	work := tr.WorkerMiddleware()
	require.NoError(t, work.Work(context.Background(), &rivertype.JobRow{Kind: "crawl", Attempt: 2, Metadata: params[0].Metadata},
		func(ctx context.Context) error { inner = trace.SpanContextFromContext(ctx); return nil }))
	failure := errors.New("the site is down")
	require.ErrorIs(t, work.Work(context.Background(), &rivertype.JobRow{Kind: "mail", Attempt: 1, Metadata: []byte(`{}`)},
		func(context.Context) error { return failure }), failure)

	spans := sink.flushed(t, tr)
	job := spans["job crawl"]
	require.Equal(t, request.SpanContext().TraceID().String(), job.trace, "the job continues the request's trace")
	require.Equal(t, request.SpanContext().SpanID().String(), job.parent)
	require.Equal(t, job.id, inner.SpanID().String(), "the job's work runs inside its span")
	require.Equal(t, tracev1.Span_SPAN_KIND_CONSUMER, job.kind)
	require.Equal(t, "crawl", job.attrs["switchboard.job.kind"])
	require.Equal(t, int64(2), job.attrs["switchboard.job.attempt"])
	mail := spans["job mail"]
	require.Empty(t, mail.parent, "a job inserted untraced starts its own trace")
	require.Equal(t, tracev1.Status_STATUS_CODE_ERROR, mail.status)
	require.Equal(t, []string{"exception"}, mail.events, "the error is recorded")
}

func TestEndRecordsTheOutcome(t *testing.T) {
	tr, sink := newTracing(t)
	_, ok := tr.Start(context.Background(), "fine", trace.SpanKindInternal)
	tracing.End(ok, nil)
	_, bad := tr.Start(context.Background(), "failed", trace.SpanKindClient)
	tracing.End(bad, errors.New("boom"))
	spans := sink.flushed(t, tr)
	require.Equal(t, tracev1.Status_STATUS_CODE_UNSET, spans["fine"].status)
	require.Empty(t, spans["fine"].events)
	require.Equal(t, tracev1.Span_SPAN_KIND_CLIENT, spans["failed"].kind)
	require.Equal(t, tracev1.Status_STATUS_CODE_ERROR, spans["failed"].status)
	require.Equal(t, []string{"exception"}, spans["failed"].events)
}
