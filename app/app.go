// Package app assembles one Switchboard process: the store, the model clients, the turn
// pipeline, the durable job queue and its workers, the event hub and relay, and the HTTP
// server. `switchboard serve` and the end-to-end tests build it the same way.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"switchboard/agent"
	"switchboard/catalog"
	"switchboard/events"
	"switchboard/llm"
	"switchboard/manage"
	"switchboard/mcp"
	"switchboard/netguard"
	"switchboard/ratelimit"
	"switchboard/server"
	"switchboard/store"
)

// Config is everything a process is told.
type Config struct {
	Server              server.Config
	Families            map[string]llm.FamilyConfig
	Development         bool
	WebhookAllowPrivate bool
	Delivery            events.DeliveryConfig
	VendorTimeout       time.Duration
	// ResponseTTL is how long a background response may stay unfinished (RESPONSE_TTL).
	ResponseTTL time.Duration
	// DevelopmentCreditNanoUSD is the starting credit of the development workspace.
	DevelopmentCreditNanoUSD int64
}

// App is a wired process.
type App struct {
	Server *server.Server
	Hub    *events.Hub
	Jobs   *river.Client[pgx.Tx]
	relay  *events.Relay
	store  *store.Store
	ttl    time.Duration

	development bool
	devCredit   int64
	log         *slog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New wires a process over an open store.
func New(cfg Config, st *store.Store, cat *catalog.Catalog, log *slog.Logger) (*App, error) {
	if cfg.VendorTimeout == 0 {
		cfg.VendorTimeout = 5 * time.Minute
	}
	cfg.Server.Development = cfg.Development
	if cfg.ResponseTTL == 0 {
		cfg.ResponseTTL = 15 * time.Minute
	}
	if cfg.Delivery == (events.DeliveryConfig{}) {
		cfg.Delivery = events.DefaultDeliveryConfig
	}
	// The default transport keeps 2 idle connections per host: under load every other vendor
	// call opened a new connection (found with bench/).
	vendorTransport := http.DefaultTransport.(*http.Transport).Clone()
	vendorTransport.MaxIdleConnsPerHost = 256
	models, err := llm.NewRegistry(cfg.Families, cfg.Development, &http.Client{Timeout: cfg.VendorTimeout, Transport: vendorTransport})
	if err != nil {
		return nil, err
	}
	guard := netguard.Guard{AllowPrivate: cfg.WebhookAllowPrivate}

	workers := river.NewWorkers()
	// The background worker needs the turn pipeline, whose tools need the job queue, whose
	// client needs its workers registered first: the pipeline is handed to it once built.
	background := server.NewBackgroundWorker(st, nil, cfg.ResponseTTL, log)
	if err := river.AddWorkerSafely(workers, background); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, events.NewDeliverer(st, guard.Client(cfg.Delivery.Timeout), cfg.Delivery, log)); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, manage.NewCrawler(st, guard, log)); err != nil {
		return nil, err
	}
	jobs, err := river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{
		Logger:  log.With(slog.String("component", "jobs")),
		Workers: workers,
		Queues: map[string]river.QueueConfig{
			river.QueueDefault:   {MaxWorkers: 20},
			events.DeliveryQueue: {MaxWorkers: 50},
		},
		FetchCooldown: 20 * time.Millisecond,
		// A job whose replica died is retried once this has passed; the background worker
		// is bounded by the response TTL, so the rescue comes soon after.
		RescueStuckJobsAfter: cfg.ResponseTTL + time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	hub := events.NewHub(st, log)
	// The management operations are also the builder assistant's tools.
	ops := manage.New(st, cat, guard, jobs, cfg.Server.PublicBaseURL)
	tools, err := agent.NewTools(ops.AgentTools()...)
	if err != nil {
		return nil, err
	}
	turns := agent.New(st, cat, models, tools, log)
	background.SetTurns(turns)
	toolServer := mcp.New(ops, server.WorkspaceFrom, log)
	srv, err := server.New(cfg.Server, server.Deps{
		Store: st, Catalog: cat, Limiter: ratelimit.NewMemory(nil),
		Turns: turns,
		Hub:   hub, Jobs: jobs, Guard: guard, Ops: ops, MCP: mcp.Handler(toolServer), Log: log,
	})
	if err != nil {
		return nil, err
	}
	return &App{Server: srv, Hub: hub, Jobs: jobs, relay: events.NewRelay(st, jobs, hub, log), store: st, ttl: cfg.ResponseTTL, log: log,
		development: cfg.Development, devCredit: cfg.DevelopmentCreditNanoUSD}, nil
}

// Start runs the background machinery: the job queue, the event hub and the relay.
func (a *App) Start(ctx context.Context) error {
	if a.development {
		// The development user acts in workspace `default`; make sure it exists.
		if _, err := a.store.CreateWorkspace(ctx, server.DevelopmentWorkspace, a.devCredit); err != nil && !errors.Is(err, store.ErrExists) {
			return err
		}
	}
	ctx, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := a.Jobs.Start(ctx); err != nil {
		return fmt.Errorf("start job queue: %w", err)
	}
	a.wg.Add(3)
	go func() { defer a.wg.Done(); a.Hub.Run(ctx) }()
	go func() { defer a.wg.Done(); a.relay.Run(ctx) }()
	go func() { defer a.wg.Done(); a.sweep(ctx) }()
	return nil
}

// sweep fails background responses stuck past their TTL and forgets expired idempotency
// keys: at start (a crash may have left some behind) and then periodically.
func (a *App) sweep(ctx context.Context) {
	interval := min(max(a.ttl/4, 100*time.Millisecond), time.Minute)
	for {
		if n, err := server.SweepStuckResponses(ctx, a.store, a.ttl); err != nil && ctx.Err() == nil {
			a.log.Error("sweeping stuck responses", slog.String("error", err.Error()))
		} else if n > 0 {
			a.log.Warn("failed stuck background responses", slog.Int("count", n))
		}
		if _, err := a.store.DeleteExpiredIdempotencyKeys(ctx); err != nil && ctx.Err() == nil {
			a.log.Error("sweeping idempotency keys", slog.String("error", err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// Stop lets running jobs finish (until ctx ends, then cancels them) and stops the hub and
// relay. Call it after the HTTP server has drained.
func (a *App) Stop(ctx context.Context) error {
	err := a.Jobs.Stop(ctx)
	if ctx.Err() != nil {
		err = a.Jobs.StopAndCancel(context.Background())
	}
	if a.cancel != nil {
		a.cancel()
	}
	a.wg.Wait()
	return err
}

// Handler is the HTTP handler of every surface.
func (a *App) Handler() http.Handler { return a.Server.Handler() }
