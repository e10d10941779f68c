package app

import (
	"context"
	"errors"
	"time"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/metrics"
)

// observe installs the turn and tool hooks of the pipeline when metrics are on; without
// them the pipeline runs unobserved, at no cost.
func observe(p *agent.Pipeline, cat *catalog.Catalog, m *metrics.Metrics) {
	if m == nil {
		return
	}
	p.ObserveTurn = func(ctx context.Context, t agent.Turn) (context.Context, func(*agent.Outcome, error)) {
		start := time.Now()
		return ctx, func(out *agent.Outcome, err error) {
			model := "unknown" // never the caller's text: an unknown id would be a new series
			if _, ok := cat.Lookup(t.Model); ok {
				model = t.Model
			}
			var in, outTokens, cost int64
			if out != nil {
				in, outTokens, cost = out.Usage.InputTokens, out.Usage.OutputTokens, out.CostNanoUSD
			}
			m.Turn(t.Surface, model, turnOutcome(err), time.Since(start), in, outTokens, cost)
		}
	}
}

// turnOutcome is `completed` or the error's type (invalid_request_error, upstream_error, ...).
func turnOutcome(err error) string {
	if err == nil {
		return "completed"
	}
	if e := apierr.As(err); e != nil {
		return e.Type()
	}
	return "server_error"
}

// observedModels times every vendor call.
type observedModels struct {
	inner   agent.Models
	metrics *metrics.Metrics
}

func (o observedModels) For(family string) (llm.Client, error) {
	c, err := o.inner.For(family)
	if err != nil {
		return nil, err
	}
	return observedClient{inner: c, family: family, metrics: o.metrics}, nil
}

type observedClient struct {
	inner   llm.Client
	family  string
	metrics *metrics.Metrics
}

func (c observedClient) Generate(ctx context.Context, req llm.Request, onDelta func(string) error) (llm.Result, error) {
	start := time.Now()
	var first time.Duration
	wrapped := onDelta
	if onDelta != nil {
		wrapped = func(s string) error {
			if first == 0 {
				first = time.Since(start)
			}
			return onDelta(s)
		}
	}
	res, err := c.inner.Generate(ctx, req, wrapped)
	c.metrics.VendorCall(c.family, vendorOutcome(err), time.Since(start), first)
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
