package app

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/metrics"
	"switchboard/store"
	"switchboard/tracing"
)

// observe installs the hooks of metrics and traces on the pipeline and the store; with
// neither configured nothing is installed, and the hooks cost nothing.
func observe(p *agent.Pipeline, st *store.Store, cat *catalog.Catalog, m *metrics.Metrics, tr *tracing.Tracing) {
	if m == nil && tr == nil {
		return
	}
	p.ObserveTurn = func(ctx context.Context, t agent.Turn) (context.Context, func(*agent.Outcome, error)) {
		start := time.Now()
		model := "unknown" // never the caller's text: an unknown id would be a new series
		if _, ok := cat.Lookup(t.Model); ok {
			model = t.Model
		}
		var span trace.Span
		if tr != nil {
			ctx, span = tr.Start(ctx, "turn", trace.SpanKindInternal,
				attribute.String("switchboard.surface", t.Surface), attribute.String("switchboard.model", model),
				attribute.String("switchboard.workspace_id", t.WorkspaceID.String()))
		}
		return ctx, func(out *agent.Outcome, err error) {
			var in, outTokens, cost int64
			if out != nil {
				in, outTokens, cost = out.Usage.InputTokens, out.Usage.OutputTokens, out.CostNanoUSD
			}
			m.Turn(t.Surface, model, turnOutcome(err), time.Since(start), in, outTokens, cost)
			if span != nil {
				span.SetAttributes(attribute.Int64("switchboard.tokens.input", in), attribute.Int64("switchboard.tokens.output", outTokens))
				tracing.End(span, err)
			}
		}
	}
	if tr == nil {
		return
	}
	p.ObserveTool = func(ctx context.Context, name string) (context.Context, func()) {
		ctx, span := tr.Start(ctx, "tool "+name, trace.SpanKindInternal, attribute.String("switchboard.tool", name))
		return ctx, func() { span.End() }
	}
	st.ObserveTx(func(ctx context.Context) (context.Context, func(error)) {
		ctx, span := tr.Start(ctx, "store transaction", trace.SpanKindClient, attribute.String("db.system", "postgresql"))
		return ctx, func(err error) { tracing.End(span, err) }
	})
}

// turnOutcome is `completed`, `cancelled` (its caller gave up) or the error's type
// (invalid_request_error, upstream_error, ...).
func turnOutcome(err error) string {
	if err == nil {
		return "completed"
	}
	if errors.Is(err, context.Canceled) {
		return "cancelled"
	}
	if e := apierr.As(err); e != nil {
		return e.Type()
	}
	return "server_error"
}

// observedModels times and traces every vendor call.
type observedModels struct {
	inner   agent.Models
	metrics *metrics.Metrics
	tracing *tracing.Tracing
}

func (o observedModels) For(family string) (llm.Client, error) {
	c, err := o.inner.For(family)
	if err != nil {
		return nil, err
	}
	return observedClient{inner: c, family: family, metrics: o.metrics, tracing: o.tracing}, nil
}

type observedClient struct {
	inner   llm.Client
	family  string
	metrics *metrics.Metrics
	tracing *tracing.Tracing
}

func (c observedClient) Generate(ctx context.Context, req llm.Request, onDelta func(string) error) (llm.Result, error) {
	start := time.Now()
	var span trace.Span
	if c.tracing != nil {
		ctx, span = c.tracing.Start(ctx, "vendor call", trace.SpanKindClient,
			attribute.String("switchboard.family", c.family), attribute.String("gen_ai.request.model", req.Model))
	}
	var first time.Duration
	wrapped := onDelta
	if onDelta != nil {
		wrapped = func(s string) error {
			if first == 0 {
				first = time.Since(start)
				if span != nil {
					span.AddEvent("first token")
				}
			}
			return onDelta(s)
		}
	}
	res, err := c.inner.Generate(ctx, req, wrapped)
	c.metrics.VendorCall(c.family, vendorOutcome(err), time.Since(start), first)
	if span != nil {
		span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", res.Usage.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", res.Usage.OutputTokens))
		tracing.End(span, err)
	}
	return res, err
}

// vendorOutcome is `ok` or the kind of upstream failure (timeout, rate_limited, ...).
func vendorOutcome(err error) string {
	var le *llm.Error
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &le):
		return string(le.Kind)
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "error"
}
