// Package tracing records OpenTelemetry spans of requests, turns, vendor calls, tool calls,
// store transactions, jobs and webhook deliveries, exported over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. The exporter
// reads the standard OTEL_* variables itself (headers, timeout, sampler through
// OTEL_TRACES_SAMPLER, service name through OTEL_SERVICE_NAME, ...).
//
// Without them New returns nil and nothing is hooked: tracing off costs nothing. A nil
// *Tracing is valid; its methods do nothing.
package tracing

import (
	"context"
	"fmt"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Tracing is the tracer of one process.
type Tracing struct {
	provider   *sdktrace.TracerProvider
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

// Enabled reports whether the environment asks for traces.
func Enabled(getenv func(string) string) bool {
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New starts the OTLP/HTTP exporter (batching, in the background).
func New(ctx context.Context) (*Tracing, error) {
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
	}
	// The service is `switchboard` unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) says
	// otherwise: the SDK's default resource, read from them, wins the merge.
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName("switchboard")), resource.Default())
	if err != nil {
		// A schema conflict between the SDK's default resource and ours: keep the SDK's
		// (OTEL_SERVICE_NAME still applies).
		res = resource.Default()
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	return &Tracing{provider: provider, tracer: provider.Tracer("switchboard"),
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}, nil
}

// Shutdown exports what is buffered and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Start begins a span; end it with End.
func (t *Tracing) Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// End ends a span with the outcome of its work.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Echo is the middleware that makes each request a server span (continuing an incoming
// traceparent), named by its route template, with the request id as an attribute. It runs
// after the request id middleware and outside the request logger, so the status it records
// is the one written.
func (t *Tracing) Echo() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			ctx := t.propagator.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			ctx, span := t.Start(ctx, req.Method+" "+route, trace.SpanKindServer,
				semconv.HTTPRequestMethodKey.String(req.Method), semconv.HTTPRoute(route),
				attribute.String("switchboard.request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
			c.SetRequest(req.WithContext(ctx))
			err := next(c)
			status := c.Response().Status
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
			if status >= 500 {
				span.SetStatus(codes.Error, strconv.Itoa(status))
			}
			span.End()
			return err
		}
	}
}

// jobMetadataKey holds the trace context inserted with a job, in the job's metadata.
const jobMetadataKey = "otel"

// InsertMiddleware stores the inserting request's trace context in each job's metadata, so
// the job's span continues the request's trace on whichever replica works it.
func (t *Tracing) InsertMiddleware() rivertype.JobInsertMiddleware { return &insertMiddleware{t: t} }

type insertMiddleware struct {
	river.MiddlewareDefaults
	t *Tracing
}

func (m *insertMiddleware) InsertMany(ctx context.Context, many []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	carrier := propagation.MapCarrier{}
	m.t.propagator.Inject(ctx, carrier)
	if len(carrier) > 0 {
		for _, p := range many {
			p.Metadata = withTraceContext(p.Metadata, carrier)
		}
	}
	return doInner(ctx)
}

// WorkerMiddleware makes each worked job a consumer span, linked to the trace that
// inserted it.
func (t *Tracing) WorkerMiddleware() rivertype.WorkerMiddleware { return &workerMiddleware{t: t} }

type workerMiddleware struct {
	river.MiddlewareDefaults
	t *Tracing
}

func (m *workerMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	ctx = m.t.propagator.Extract(ctx, traceContextOf(job.Metadata))
	ctx, span := m.t.Start(ctx, "job "+job.Kind, trace.SpanKindConsumer,
		attribute.String("switchboard.job.kind", job.Kind), attribute.Int("switchboard.job.attempt", job.Attempt))
	err := doInner(ctx)
	End(span, err)
	return err
}
