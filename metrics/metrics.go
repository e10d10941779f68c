// Package metrics counts what operators watch, in Prometheus's format (served on METRICS_ADDR
// only, never on the public port). Labels are low-cardinality by construction: routes are
// echo's templates, models are catalog ids, families, surfaces, kinds and outcomes are small
// fixed sets; no id of a workspace, key, response or request is ever a label.
//
// A nil *Metrics is valid and counts nothing: without METRICS_ADDR no metric exists and the
// hooks cost a nil check.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"switchboard/store"
)

const namespace = "switchboard"

// Metrics holds the collectors of one process.
type Metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.HistogramVec
	turns        *prometheus.CounterVec
	turnDuration *prometheus.HistogramVec
	vendorCalls  *prometheus.HistogramVec
	firstToken   *prometheus.HistogramVec
	tokens       *prometheus.CounterVec
	spend        *prometheus.CounterVec
	jobs         *prometheus.CounterVec
	jobLag       *prometheus.HistogramVec
	webhooks     *prometheus.CounterVec
	webhookLag   prometheus.Histogram
	rateLimited  *prometheus.CounterVec
}

// latency buckets: from a cached read (a few ms) to a long model turn (minutes).
var latency = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// New registers the process's collectors, Go runtime and process ones included.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := factory{reg}
	m := &Metrics{
		reg: reg,
		requests: f.histogram("http_request_duration_seconds", "HTTP requests by route template, method and status.",
			[]string{"route", "method", "status"}),
		turns:        f.counter("turns_total", "Agent turns by surface, model and outcome.", []string{"surface", "model", "outcome"}),
		turnDuration: f.histogram("turn_duration_seconds", "Agent turn duration by surface.", []string{"surface"}),
		vendorCalls: f.histogram("vendor_call_duration_seconds", "Model vendor calls by family and outcome, streaming included.",
			[]string{"family", "outcome"}),
		firstToken: f.histogram("vendor_time_to_first_token_seconds", "Time from a vendor call to its first streamed text.", []string{"family"}),
		tokens:     f.counter("tokens_total", "Model tokens by model and direction (input, output).", []string{"model", "direction"}),
		spend:      f.counter("spend_usd_total", "Model spend charged, in US dollars, by model.", []string{"model"}),
		jobs:       f.counter("jobs_worked_total", "Durable jobs worked by kind and outcome (ok, error, cancelled).", []string{"kind", "outcome"}),
		jobLag:     f.histogram("job_start_lag_seconds", "Time from a job being due to a worker starting it, by kind.", []string{"kind"}),
		webhooks: f.counter("webhook_deliveries_total", "Webhook delivery attempts by outcome (delivered, failed, cancelled).",
			[]string{"outcome"}),
		webhookLag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "webhook_delivery_lag_seconds",
			Help: "Queue lag of webhook deliveries: from due to attempted.", Buckets: latency}),
		rateLimited: f.counter("rate_limit_refusals_total", "Requests refused by a rate limit, by budget (key, workspace, address).",
			[]string{"budget"}),
	}
	reg.MustRegister(m.webhookLag)
	return m
}

type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string, labels []string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, labels []string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: latency}, labels)
	f.reg.MustRegister(h)
	return h
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Echo is the middleware that times every request by its route template. It belongs outside
// the request logger, whose error handling writes the final status before this one reads it.
func (m *Metrics) Echo() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil && !c.Response().Committed {
				// Not handled yet: the error handler writes the status after the middleware
				// returns. Once the request logger has handled it, the written status is the
				// answer's (a 499 for a client that hung up, a 200 for a stream that failed late).
				status = errorStatus(err)
			}
			route := c.Path()
			if route == "" { // no route matched: a path a scanner made up would be a new series
				route = "unmatched"
			}
			m.requests.WithLabelValues(route, c.Request().Method, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
			return err
		}
	}
}

// statuser is an error that knows its HTTP status (apierr.Error, echo.HTTPError).
type statuser interface{ Status() int }

func errorStatus(err error) int {
	switch e := err.(type) {
	case statuser:
		return e.Status()
	case *echo.HTTPError:
		return e.Code
	}
	return http.StatusInternalServerError
}

// Turn counts a finished turn.
func (m *Metrics) Turn(surface, model, outcome string, d time.Duration, inputTokens, outputTokens, costNanoUSD int64) {
	if m == nil {
		return
	}
	m.turns.WithLabelValues(surface, model, outcome).Inc()
	m.turnDuration.WithLabelValues(surface).Observe(d.Seconds())
	if inputTokens > 0 {
		m.tokens.WithLabelValues(model, "input").Add(float64(inputTokens))
	}
	if outputTokens > 0 {
		m.tokens.WithLabelValues(model, "output").Add(float64(outputTokens))
	}
	if costNanoUSD > 0 {
		m.spend.WithLabelValues(model).Add(float64(costNanoUSD) / 1e9)
	}
}

// VendorCall times one model call; firstToken is zero when no text was streamed.
func (m *Metrics) VendorCall(family, outcome string, d, firstToken time.Duration) {
	if m == nil {
		return
	}
	m.vendorCalls.WithLabelValues(family, outcome).Observe(d.Seconds())
	if firstToken > 0 {
		m.firstToken.WithLabelValues(family).Observe(firstToken.Seconds())
	}
}

// RateLimited counts a refused request by the budget that refused it.
func (m *Metrics) RateLimited(budget string) {
	if m == nil {
		return
	}
	m.rateLimited.WithLabelValues(budget).Inc()
}

// Job counts a worked job; lag is from when it was due to when it started.
func (m *Metrics) Job(kind, outcome string, lag time.Duration) {
	if m == nil {
		return
	}
	m.jobs.WithLabelValues(kind, outcome).Inc()
	m.jobLag.WithLabelValues(kind).Observe(lag.Seconds())
}

// WebhookDelivery counts a delivery attempt and its queue lag.
func (m *Metrics) WebhookDelivery(outcome string, lag time.Duration) {
	if m == nil {
		return
	}
	m.webhooks.WithLabelValues(outcome).Inc()
	m.webhookLag.Observe(lag.Seconds())
}

// Sources are the values read at scrape time.
type Sources struct {
	SSESubscribers     func() int
	Pool               func() *pgxpool.Stat
	RateLimitFailOpens func() uint64 // nil without a shared limiter
	JobQueue           func(ctx context.Context) ([]store.JobQueueStat, error)
	JobKinds           []string // every kind of job; one with nothing queued reads 0
}

// Watch registers the gauges read at scrape time.
func (m *Metrics) Watch(src Sources) {
	if m == nil {
		return
	}
	gauge := func(name, help string, f func() float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, f))
	}
	if src.SSESubscribers != nil {
		gauge("sse_subscribers", "Live event-stream subscriptions of this replica.", func() float64 { return float64(src.SSESubscribers()) })
	}
	if src.Pool != nil {
		gauge("db_pool_connections_total", "Connections of the database pool.", func() float64 { return float64(src.Pool().TotalConns()) })
		gauge("db_pool_connections_in_use", "Connections of the database pool in use.", func() float64 { return float64(src.Pool().AcquiredConns()) })
		gauge("db_pool_connections_idle", "Idle connections of the database pool.", func() float64 { return float64(src.Pool().IdleConns()) })
		gauge("db_pool_connections_max", "The pool's size (pool_max_conns).", func() float64 { return float64(src.Pool().MaxConns()) })
	}
	if src.RateLimitFailOpens != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "rate_limit_fail_open_total",
			Help: "Rate-limit decisions taken in-process because Redis did not answer."}, func() float64 { return float64(src.RateLimitFailOpens()) }))
	}
	if src.JobQueue != nil {
		m.reg.MustRegister(&queueCollector{read: src.JobQueue, kinds: src.JobKinds,
			waiting: prometheus.NewDesc(namespace+"_job_queue_waiting", "Jobs due and waiting for a worker, by kind.", []string{"kind"}, nil),
			running: prometheus.NewDesc(namespace+"_job_queue_running", "Jobs running now, by kind.", []string{"kind"}, nil),
			age:     prometheus.NewDesc(namespace+"_job_queue_oldest_age_seconds", "Age of the oldest waiting job, by kind.", []string{"kind"}, nil),
			failed:  prometheus.NewDesc(namespace+"_job_queue_scrape_error", "1 when the queue could not be read at this scrape.", nil, nil),
		})
	}
}

// queueCollector reads the queue's depth per kind at each scrape (one aggregate query).
type queueCollector struct {
	read                          func(ctx context.Context) ([]store.JobQueueStat, error)
	kinds                         []string // reported as 0 when nothing of theirs is queued
	waiting, running, age, failed *prometheus.Desc
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- q.waiting
	ch <- q.running
	ch <- q.age
	ch <- q.failed
}

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	stats, err := q.read(ctx)
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(q.failed, prometheus.GaugeValue, failed)
	if err == nil {
		stats = withIdleKinds(stats, q.kinds)
	}
	for _, s := range stats {
		ch <- prometheus.MustNewConstMetric(q.waiting, prometheus.GaugeValue, float64(s.Waiting), s.Kind)
		ch <- prometheus.MustNewConstMetric(q.running, prometheus.GaugeValue, float64(s.Running), s.Kind)
		ch <- prometheus.MustNewConstMetric(q.age, prometheus.GaugeValue, s.OldestAge.Seconds(), s.Kind)
	}
}

// withIdleKinds adds a zero row for each known kind the queue holds nothing of, so a gauge
// drops to 0 instead of vanishing (an absent series reads as "no data" on a dashboard).
func withIdleKinds(stats []store.JobQueueStat, kinds []string) []store.JobQueueStat {
	present := make(map[string]bool, len(stats))
	for _, s := range stats {
		present[s.Kind] = true
	}
	for _, k := range kinds {
		if !present[k] {
			stats = append(stats, store.JobQueueStat{Kind: k})
			present[k] = true
		}
	}
	return stats
}
