// Package app assembles one Switchboard process: the store, the model clients, the turn
// pipeline, the responses domain, the durable job queue and its workers, the event hub and
// relay, and the HTTP server. `switchboard serve` and the end-to-end tests build it the same
// way.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"switchboard/accounts"
	"switchboard/agent"
	"switchboard/blueprint"
	"switchboard/bulk"
	"switchboard/campaigns"
	"switchboard/catalog"
	"switchboard/channels"
	"switchboard/compliance"
	"switchboard/contacts"
	"switchboard/converse"
	"switchboard/dashboard"
	"switchboard/erasure"
	"switchboard/events"
	"switchboard/inbox"
	"switchboard/llm"
	"switchboard/mailer"
	"switchboard/manage"
	"switchboard/mcp"
	"switchboard/metrics"
	"switchboard/msgapps"
	"switchboard/netguard"
	"switchboard/phonenumbers"
	"switchboard/ratelimit"
	"switchboard/recordings"
	"switchboard/responses"
	"switchboard/server"
	"switchboard/sms"
	"switchboard/store"
	"switchboard/tracing"
	"switchboard/voice"
	"switchboard/webchat"
	"switchboard/workflows"
)

// Config is everything a process is told. It comes complete: start from DefaultConfig
// (cmd/switchboard's loadConfig does, then reads the environment); New applies no defaults.
type Config struct {
	Server              server.Config
	Responses           responses.Config
	Families            map[string]llm.FamilyConfig
	WebhookAllowPrivate bool
	Delivery            events.DeliveryConfig
	VendorTimeout       time.Duration // bounds one model call, streaming included
	ConfirmationTTL     time.Duration // how long a parked action waits for `YES <code>`
	// DevelopmentCreditNanoUSD is the starting credit of the development workspace.
	DevelopmentCreditNanoUSD int64
	// Metrics turns on the Prometheus collectors (App.Metrics; METRICS_ADDR serves them).
	Metrics bool
	// Tracing turns on OpenTelemetry spans, exported over OTLP as the standard OTEL_*
	// variables say (tracing.Enabled tells whether they ask for it).
	Tracing bool
	// RedisURL, when set, makes the rate limits shared by every replica through Redis.
	RedisURL string
	// DrainDelay is how long a SIGTERM'd process keeps serving while GET /ready answers 503
	// `draining`, so that load balancers stop sending before it stops accepting.
	DrainDelay time.Duration
	// MeterFlushInterval is how long the spend of an ephemeral turn may wait, after the turn
	// answered, to be committed with others in one transaction (agent.WriteBehind); zero
	// commits each turn before it answers. A crash loses at most this much ephemeral spend.
	MeterFlushInterval time.Duration
	// GroupCommitWindow is how long the group committer (agent.GroupCommit) lets a batch of
	// stored turns gather after its first turn arrived; zero commits each turn in a
	// transaction of its own. Either way a stored turn answers after its commit.
	GroupCommitWindow time.Duration
	// SMTPURL is SMTP_URL: where notification emails go (none are sent when empty).
	SMTPURL string
	// Clock is the time deployed agents read business hours and pickup timeouts by;
	// time.Now when nil. Tests pin it.
	Clock func() time.Time
	// Accounts are the dashboard's users and sessions; its Development and PublicBaseURL
	// are Server's (AccountsConfig).
	Accounts accounts.Config
	// ComplianceVersion is COMPLIANCE_VERSION: the version of the outbound compliance
	// acknowledgment workspaces must have accepted (its text is compliance/outbound-<v>.md).
	ComplianceVersion string
	// SMS is the SMS provider account (TWILIO_*); without credentials campaigns cannot
	// start and phone-number routes answer 409 sms_provider_not_configured.
	SMS sms.Config
	// MsgApps is where the messaging apps' APIs are reached (META_GRAPH_URL,
	// INSTAGRAM_GRAPH_URL, TELEGRAM_API_URL).
	MsgApps msgapps.Config
	// ChannelWorkers is how many replies to inbound messages (SMS) one replica works at
	// once (CHANNEL_WORKERS); each mostly waits on the model.
	ChannelWorkers int
	// CampaignPeriod is the span a campaign's rate_per_minute is counted over: a minute
	// (tests shorten it).
	CampaignPeriod time.Duration
	// WorkflowTick is how often workflow triggers (events, schedules) are looked at; 0: 2 s.
	WorkflowTick time.Duration
	// InboxSweepPeriod is how often the team inbox looks for escalated conversations that
	// waited unclaimed too long, to email the people who opted in (tests shorten it).
	InboxSweepPeriod time.Duration
	// VoiceSlowAfter is how long a phone call's turn waits for the model before the caller
	// hears a holding phrase (voice.DefaultSlowAfter when 0; tests shorten it).
	VoiceSlowAfter time.Duration
}

// AccountsConfig is the accounts configuration with the server's environment and address.
func (c Config) AccountsConfig() accounts.Config {
	a := c.Accounts
	a.Development, a.PublicBaseURL = c.Server.Development, c.Server.PublicBaseURL
	return a
}

// DefaultConfig is the configuration of an unconfigured process: the one place where
// defaults live (the README's environment table documents them).
func DefaultConfig() Config {
	return Config{
		Server: server.Config{
			PublicBaseURL: "http://localhost:8080",
			KeyRPM:        600,
			WorkspaceRPM:  3000,
			// The webchat budgets (bench/run.sh agents raises them).
			WebchatVisitorRPM:    webchat.VisitorRPM,
			WebchatDeploymentRPM: webchat.DeploymentRPM,
			BodyLimitBytes:       1 << 20,
			HealthCheckLimit:     2 * time.Second,
			SSEPingInterval:      15 * time.Second,
			AuthCacheTTL:         2 * time.Second,
		},
		Responses:                responses.Config{TTL: 15 * time.Minute, IdempotencyRetention: 24 * time.Hour},
		Families:                 map[string]llm.FamilyConfig{},
		Delivery:                 events.DefaultDeliveryConfig,
		VendorTimeout:            5 * time.Minute,
		ConfirmationTTL:          agent.DefaultConfirmationTTL,
		DevelopmentCreditNanoUSD: 5_000_000_000,
		DrainDelay:               5 * time.Second,
		MeterFlushInterval:       10 * time.Millisecond,
		GroupCommitWindow:        2 * time.Millisecond,
		Accounts: accounts.Config{SessionLifetime: 12 * time.Hour, SessionIdleTimeout: 2 * time.Hour,
			SetPasswordTTL: 72 * time.Hour, SignInPerMinute: 10},
		ComplianceVersion: compliance.DefaultVersion,
		CampaignPeriod:    time.Minute,
		ChannelWorkers:    500,
		InboxSweepPeriod:  30 * time.Second,
	}
}

// App is a wired process.
type App struct {
	Server    *server.Server
	Metrics   *metrics.Metrics // nil unless Config.Metrics
	tracing   *tracing.Tracing // nil unless Config.Tracing
	Hub       *events.Hub
	Responses *responses.Service
	// Compliance answers whether a workspace accepted the current outbound compliance
	// acknowledgment (the gate of outbound messaging).
	Compliance *compliance.Service
	pipeline   *agent.Pipeline
	jobs       *river.Client[pgx.Tx] // works the jobs; started by Start
	relay      *events.Relay
	store      *store.Store
	redis      io.Closer // the shared limiter's client; nil without REDIS_URL
	cfg        Config
	log        *slog.Logger

	meter     *agent.WriteBehind // commits ephemeral turns' spend; nil when MeterFlushInterval is 0
	group     *agent.GroupCommit // commits the other turns in batches; nil when GroupCommitWindow is 0
	hooks     *store.Store       // the inbound webhooks' own pool (channels.Service.UseHookStores)
	reports   *store.Store       // the delivery reports' own pool
	channels  *channels.Service  // runs the inbox of inbound messages (RunInbox)
	replicaID string             // names this process in the job queue and its liveness lock
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// New wires a process over an open store, in dependency order.
func New(cfg Config, st *store.Store, cat *catalog.Catalog, log *slog.Logger) (*App, error) {
	registry, err := llm.NewRegistry(cfg.Families, cfg.Server.Development, vendorClient(), cfg.VendorTimeout)
	if err != nil {
		return nil, err
	}
	var m *metrics.Metrics
	var tr *tracing.Tracing
	var models agent.Models = registry
	if cfg.Metrics {
		m = metrics.New()
	}
	if cfg.Tracing {
		if tr, err = tracing.New(context.Background()); err != nil {
			return nil, err
		}
	}
	if m != nil || tr != nil {
		models = observedModels{inner: registry, metrics: m, tracing: tr}
	}
	guard := netguard.Guard{AllowPrivate: cfg.WebhookAllowPrivate}
	// Enqueueing and working are two River clients over one pool. The background worker
	// needs the turn pipeline, whose tools (the management operations) enqueue crawls: with
	// one client, its workers would have to exist before the pipeline. An insert-only client
	// (River's documented shape: no queues, never started) serves everything that enqueues,
	// and the client that works the jobs is built last, once every worker exists.
	inserter, err := river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{
		Logger:        jobsLogger(log),
		FetchCooldown: jobFetchCooldown, // also how often inserts may notify the workers
		Middleware:    insertMiddleware(tr),
	})
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	ops := manage.New(st, cat, guard, inserter, cfg.Server.PublicBaseURL)
	// The bulk tools are management operations too, on MCP and the assistant alike.
	bulkOps := bulk.New(st, inserter, log)
	ops.Register(bulkOps.Operations()...)
	provider, err := sms.New(cfg.SMS)
	if err != nil {
		return nil, err
	}
	phones := phonenumbers.New(st, provider, log)
	// The management operations are also the builder assistant's tools, with
	// buy_phone_number (a spend tool).
	tools, err := agent.NewTools(append(ops.AgentTools(), phones.AgentTools()...)...)
	if err != nil {
		return nil, err
	}
	hub := events.NewHub(st, log)
	pipeline := agent.New(st, cat, models, tools, log)
	pipeline.ConfirmationTTL = cfg.ConfirmationTTL
	observe(pipeline, st, cat, m, tr)
	var meter *agent.WriteBehind
	if cfg.MeterFlushInterval > 0 {
		meter = agent.NewWriteBehind(pipeline, cfg.MeterFlushInterval)
	}
	var group *agent.GroupCommit
	if cfg.GroupCommitWindow > 0 {
		group = agent.NewGroupCommit(pipeline, cfg.GroupCommitWindow)
	}
	resp := responses.New(cfg.Responses, st, pipeline, inserter, hub, log)
	mail, err := mailer.New(cfg.SMTPURL, defaultSender(cfg.Server.PublicBaseURL))
	if err != nil {
		return nil, err
	}
	// Deployed agents run on the same pipeline, with their own prompt and tools per turn.
	agents := converse.New(st, cat, pipeline, guard, inserter, cfg.Clock, log)
	comp, err := compliance.New(st, cfg.ComplianceVersion)
	if err != nil {
		return nil, err
	}
	chans := channels.New(st, provider, agents, inserter, cfg.Server.PublicBaseURL, log.With(slog.String("component", "channels")))
	// The carriers' webhooks get connections of their own (HookConns): the reply jobs, up to
	// CHANNEL_WORKERS of them, share the main pool, and a webhook must answer in milliseconds.
	// Delivery reports get a pool apart from inbound messages' (UseHookStores).
	hooks, err := st.WithOwnPool(context.Background(), HookConns, "hooks")
	if err != nil {
		return nil, err
	}
	reports, err := st.WithOwnPool(context.Background(), HookConns, "reports")
	if err != nil {
		hooks.Close()
		return nil, err
	}
	chans.UseHookStores(hooks, reports)
	// Phone calls on telco_voice channels (package voice).
	calls := voice.New(st, provider, agents, chans, cfg.Server.PublicBaseURL, cfg.Clock, log.With(slog.String("component", "voice")))
	if cfg.VoiceSlowAfter > 0 {
		calls.SlowAfter = cfg.VoiceSlowAfter
	}
	chans.Register(blueprint.ChannelTelcoVoice, calls)
	// The messaging apps (msgapp_1 … msgapp_4) ride the channel layer.
	msgapps.Register(chans, cfg.MsgApps)
	// Campaigns send over SMS, on WhatsApp channels (approved templates outside the window),
	// and call from voice channels (package voice answers the calls).
	camps := campaigns.New(st, comp, provider, inserter, campaigns.Config{Period: cfg.CampaignPeriod, Now: cfg.Clock,
		StatusCallback: channels.StatusCallbackURL(cfg.Server.PublicBaseURL), Apps: msgapps.Campaigns(chans, cfg.MsgApps), Calls: calls})
	// A person's reply goes out on the conversation's channel (inbox.Deliverer): the widget
	// and API clients read it from the conversation; SMS and the messaging apps send it
	// through the carrier or the app.
	deliverers := map[string]inbox.Deliverer{"webchat": inbox.Stored{}, "api": inbox.Stored{}, "sms": chans.Deliverer()}
	for _, app := range []blueprint.ChannelType{blueprint.ChannelMsgApp1, blueprint.ChannelMsgApp2, blueprint.ChannelMsgApp3, blueprint.ChannelMsgApp4} {
		deliverers[string(app)] = chans.Deliverer()
	}
	team := inbox.New(st, deliverers,
		inserter, cfg.Server.PublicBaseURL, cfg.Clock, log.With(slog.String("component", "inbox")))
	// Workflows: runs reach out through the SSRF guard, SMTP_URL, the model registry
	// (metered like turns) and the SMS channel's deliverer.
	flows := workflows.New(st, inserter, workflows.Config{Now: cfg.Clock, Guard: guard, Mailer: mail, Models: models,
		Catalog: cat, SMS: chans.Deliverer(), TickPeriod: cfg.WorkflowTick}, log.With(slog.String("component", "workflows")))
	replicaID := newReplicaID()
	jobWorkers := []jobWorker{
		worker(resp.Worker()),
		worker(events.NewDeliverer(st, guard.Client(cfg.Delivery.Timeout), cfg.Delivery, log)),
		worker(manage.NewCrawler(st, guard, log)),
		worker(converse.NewNotifier(mail)),
		worker(manage.NewIngester(st, guard, log)),
		worker(bulkOps.Worker()),
		worker(campaigns.NewWorker(camps, log.With(slog.String("component", "campaigns")))),
		worker(campaigns.NewSweepWorker(camps)),
		worker(phones.RenewWorker()),
		worker(channels.NewReplyWorker(chans)),
		worker(channels.NewSendWorker(chans)),
		worker(inbox.NewUnclaimedWorker(team)),
		// issue 48: the daily retention job
		worker(erasure.NewSweeper(st, log.With(slog.String("component", "retention")))),
		worker(flows.Worker()),
		worker(flows.TickWorker()),
	}
	periodic := append(append(camps.PeriodicJobs(), phones.PeriodicJobs()...), team.PeriodicJobs(cfg.InboxSweepPeriod)...)
	periodic = append(periodic, erasure.PeriodicJobs()...) // issue 48: retention
	periodic = append(periodic, flows.PeriodicJobs()...)
	jobs, err := newWorkingClient(st, cfg, log, workMiddleware(m, tr), replicaID, periodic, jobWorkers...)
	if err != nil {
		return nil, err
	}
	limiter, redisClient, ready, err := newLimiter(cfg, log)
	if err != nil {
		return nil, err
	}
	ready = append([]server.ReadyCheck{migrationsCheck(st)}, ready...)
	// Sign-in attempts have their own budgets (accounts.Service.SignIn).
	acc := accounts.New(cfg.AccountsConfig(), st, ratelimit.NewMemory(nil))
	// Webhook endpoints follow one set of rules on /v1 and the dashboard.
	endpoints := events.NewEndpoints(st, guard, inserter)
	deps := server.Deps{
		Store: st, Catalog: cat, Limiter: limiter, Responses: resp,
		Hub: hub, Webhooks: endpoints, Ops: ops, Agents: agents, MCP: mcp.Handler(mcp.New(ops, server.MCPCaller, log, mcp.WithConfirmations(pipeline))), Log: log,
		Ready:    ready,
		Pending:  meter.Pending,
		Contacts: contacts.New(st), Campaigns: camps, PhoneNumbers: phones, Channels: chans, Recordings: recordings.New(st), Inbox: team, Actions: pipeline,
		Accounts: acc, Dashboard: dashboard.New(dashboard.Deps{Store: st, Accounts: acc, Ops: ops, Channels: chans, Webhooks: endpoints, Compliance: comp, Mailer: mail, Inbox: team,
			Catalog: cat, BuilderModels: dashboard.BuilderModels(cat, cfg.Families), Log: log, Workflows: flows}),
	}
	deps.Workflows = flows
	if tr != nil {
		deps.Outer = append(deps.Outer, tr.Echo())
	}
	if m != nil {
		deps.Outer = append(deps.Outer, m.Echo())
		deps.RateLimited = m.RateLimited
		src := metrics.Sources{SSESubscribers: hub.Subscribers, Pool: st.Pool().Stat, JobQueue: st.JobQueueStats, JobKinds: kindsOf(jobWorkers)}
		if shared, ok := limiter.(*ratelimit.Redis); ok {
			src.RateLimitFailOpens = shared.FailOpens
		}
		m.Watch(src)
	}
	srv, err := server.New(cfg.Server, deps)
	if err != nil {
		return nil, err
	}
	return &App{Server: srv, Metrics: m, tracing: tr, Hub: hub, Responses: resp, Compliance: comp, pipeline: pipeline, jobs: jobs, relay: events.NewRelay(st, inserter, hub, log),
		store: st, redis: redisClient, replicaID: replicaID, cfg: cfg, log: log, meter: meter, group: group, hooks: hooks, reports: reports, channels: chans}, nil
}

// newLimiter is the in-process limiter, or with REDIS_URL the limiter shared through Redis
// (failing open to an in-process one) and its readiness check.
func newLimiter(cfg Config, log *slog.Logger) (ratelimit.Limiter, io.Closer, []server.ReadyCheck, error) {
	memory := ratelimit.NewMemory(nil)
	if cfg.RedisURL == "" {
		return memory, nil, nil, nil
	}
	client, err := ratelimit.NewRedisClient(cfg.RedisURL)
	if err != nil {
		return nil, nil, nil, err
	}
	shared := ratelimit.NewRedis(client, memory, log.With(slog.String("component", "ratelimit")))
	return shared, client, []server.ReadyCheck{{Name: "redis", Check: shared.Ping, Degrades: true}}, nil
}

// migrationsCheck is ready once the database has every migration this build knows; a
// positive answer is kept (the schema only moves forward).
func migrationsCheck(st *store.Store) server.ReadyCheck {
	var applied atomic.Bool
	return server.ReadyCheck{Name: "migrations", Check: func(ctx context.Context) error {
		if applied.Load() {
			return nil
		}
		ok, err := store.MigrationsApplied(ctx, st.Pool())
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("the database lacks migrations of this build: run `switchboard migrate`")
		}
		applied.Store(true)
		return nil
	}}
}

// HookConns is the size of the webhooks' own pool, and of the delivery reports'. A webhook
// holds a connection for one short transaction, most of it waiting for the commit's WAL
// flush: several connections let concurrent webhooks share a flush (at 200 a second on 2
// connections, each waiting for its own flush on a slow disk, they queued).
const HookConns = 8

// jobFetchCooldown is the shortest pause between two fetches of a queue: short, so that a
// background response starts soon after it is queued.
const jobFetchCooldown = 20 * time.Millisecond

// vendorClient is the HTTP client of the model vendors. The default transport keeps 2 idle
// connections per host: under load every other vendor call opened a new connection (found
// with bench/). Its 4 KB write buffer sent a builder assistant's request (17 KB: the system
// prompt and every tool) in two writes, the first 4 KB and then the rest; 32 KB sends the
// headers and such a body in one, and saves the copy buffer of the second (strace: one write
// fewer per stored turn; 107 -> 95 KB allocated per turn). It has no Timeout: the adapters
// bound a call by its context (VendorTimeout), where http.Client.Timeout would add a timer
// and a goroutine to every call (net/http's setRequestCancel, 1.9% of the server's CPU in
// an ephemeral turn).
func vendorClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	t.WriteBufferSize = vendorWriteBuffer
	return &http.Client{Transport: t}
}

// vendorWriteBuffer is the vendor connections' write buffer (per connection, so at most 8 MB
// for 256 idle ones).
const vendorWriteBuffer = 32 << 10

// newWorkingClient is the River client that works jobs, with every worker registered.
func newWorkingClient(st *store.Store, cfg Config, log *slog.Logger, middleware []rivertype.Middleware, replicaID string,
	periodic []*river.PeriodicJob, register ...jobWorker) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	for _, w := range register {
		if err := w.add(workers); err != nil {
			return nil, err
		}
	}
	jobs, err := river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{
		Logger:       jobsLogger(log),
		Workers:      workers,
		Middleware:   middleware,
		ID:           replicaID,
		PeriodicJobs: periodic,
		Queues: map[string]river.QueueConfig{
			river.QueueDefault:   {MaxWorkers: 20},
			events.DeliveryQueue: {MaxWorkers: 50},
			// Replies to inbound messages mostly wait on the model: at 200 texts a second and
			// 2 s a reply, 400 are in flight.
			channels.Queue: {MaxWorkers: cfg.ChannelWorkers},
			// Workflow runs mostly wait on receivers and models.
			workflows.Queue: {MaxWorkers: 50},
		},
		FetchCooldown: jobFetchCooldown,
		// A job whose replica died is retried once this has passed; the background worker
		// is bounded by the response TTL, so the rescue comes soon after.
		RescueStuckJobsAfter: cfg.Responses.TTL + time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	return jobs, nil
}

// jobWorker is one kind of job and how to register its worker on the working client.
type jobWorker struct {
	kind string
	add  func(*river.Workers) error
}

// worker wraps a job worker for the working client.
func worker[T river.JobArgs](w river.Worker[T]) jobWorker {
	var args T
	return jobWorker{kind: args.Kind(), add: func(ws *river.Workers) error { return river.AddWorkerSafely(ws, w) }}
}

// kindsOf names the job kinds, so the queue's gauges read 0 for a kind with nothing waiting
// rather than vanishing from the scrape.
func kindsOf(ws []jobWorker) []string {
	kinds := make([]string, len(ws))
	for i, w := range ws {
		kinds[i] = w.kind
	}
	return kinds
}

// Start runs the background machinery: the job queue, the event hub, the relay and the
// sweeper of stuck responses and expired idempotency keys.
func (a *App) Start(ctx context.Context) error {
	if a.cfg.Server.Development {
		// The development user acts in workspace `default`; make sure it exists.
		if _, err := a.store.CreateWorkspace(ctx, server.DevelopmentWorkspace, a.cfg.DevelopmentCreditNanoUSD); err != nil && !errors.Is(err, store.ErrExists) {
			return err
		}
	}
	if err := a.prepareSecrets(ctx); err != nil {
		return err
	}
	// The liveness lock is held before any job is fetched under this replica's id.
	lock, err := a.store.HoldReplicaLock(ctx, a.replicaID)
	if err != nil {
		return err
	}
	ctx, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if err := a.jobs.Start(ctx); err != nil {
		lock.Release(ctx)
		return fmt.Errorf("start job queue: %w", err)
	}
	a.wg.Add(7)
	go func() { defer a.wg.Done(); a.channels.RunInbox(ctx) }()
	go func() { defer a.wg.Done(); watchReplicas(ctx, a.store, a.replicaID, lock, a.log) }()
	go func() { defer a.wg.Done(); a.store.RunYoungTableAnalyzer(ctx, 2*time.Second, 10*time.Minute, a.log) }()
	go func() { defer a.wg.Done(); a.Hub.Run(ctx) }()
	go func() { defer a.wg.Done(); a.relay.Run(ctx) }()
	go func() { defer a.wg.Done(); a.Responses.RunSweeper(ctx) }()
	go func() { defer a.wg.Done(); a.pipeline.RunExpirer(ctx, expiryInterval(a.cfg.ConfirmationTTL)) }()
	return nil
}

// prepareSecrets makes sure the webhook secrets can be opened: without SECRETS_KEY, the
// process starts only when no endpoint exists; with it, the secrets of endpoints created
// before secrets were sealed are sealed now, and secrets sealed with a key that is not
// configured stop a production start (development only warns: its throwaway keys come and
// go).
func (a *App) prepareSecrets(ctx context.Context) error {
	counts, err := a.store.SecretKeyCounts(ctx)
	if err != nil {
		return err
	}
	keys := a.store.Secrets()
	if keys == nil {
		if total := sum(counts); total > 0 {
			return fmt.Errorf("SECRETS_KEY is not set, and %d webhook endpoint(s) exist whose signing secrets it protects: "+
				"set SECRETS_KEY to the key they were sealed with (for secrets never sealed, any new key: base64 of 32 random bytes, `openssl rand -base64 32`)", total)
		}
		a.log.Warn("SECRETS_KEY is not set: webhook endpoints cannot be created until it is")
		return nil
	}
	report, err := a.store.SealSecrets(ctx, false)
	if err != nil {
		return fmt.Errorf("seal webhook secrets: %w", err)
	}
	if report.Sealed > 0 {
		a.log.Info("sealed the plaintext webhook secrets with SECRETS_KEY", slog.Int("endpoints", report.Sealed), slog.String("key_id", keys.CurrentID()))
	}
	if len(report.Remaining) == 0 {
		return nil
	}
	err = fmt.Errorf("webhook secrets of %d endpoint(s) are sealed with key id(s) %v, which neither SECRETS_KEY (key id %s) nor SECRETS_KEY_PREVIOUS is: "+
		"their deliveries cannot be signed; set SECRETS_KEY (or SECRETS_KEY_PREVIOUS) to that key", sum(report.Remaining), slices.Sorted(maps.Keys(report.Remaining)), keys.CurrentID())
	if a.cfg.Server.Development {
		a.log.Warn(err.Error())
		return nil
	}
	return err
}

func sum(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// Stop lets running jobs finish (until ctx ends, then cancels them) and stops the hub,
// relay and sweeper. Call it after the HTTP server has drained.
func (a *App) Stop(ctx context.Context) error {
	err := a.jobs.Stop(ctx)
	if ctx.Err() != nil {
		err = a.jobs.StopAndCancel(context.Background())
	}
	if a.cancel != nil {
		a.cancel()
	}
	a.wg.Wait()
	if a.group != nil {
		// After the HTTP server drained and the jobs stopped: nothing waits any more, but a
		// batch may still be committing.
		if gerr := a.group.Close(ctx); gerr != nil && err == nil {
			err = gerr
		}
	}
	if a.meter != nil {
		// After the HTTP server drained: every ephemeral turn that answered is committed.
		if merr := a.meter.Close(ctx); merr != nil && err == nil {
			err = merr
		}
	}
	if a.redis != nil {
		_ = a.redis.Close()
	}
	if a.hooks != nil {
		a.hooks.Close() // after the HTTP server drained: no webhook is in flight
	}
	if a.reports != nil {
		a.reports.Close()
	}
	if err := a.tracing.Shutdown(context.WithoutCancel(ctx)); err != nil {
		a.log.Warn("exporting the last spans", slog.String("error", err.Error()))
	}
	return err
}

// insertMiddleware carries the trace context into the jobs a request inserts.
func insertMiddleware(tr *tracing.Tracing) []rivertype.Middleware {
	if tr == nil {
		return nil
	}
	return []rivertype.Middleware{tr.InsertMiddleware()}
}

// workMiddleware traces and counts each job worked.
func workMiddleware(m *metrics.Metrics, tr *tracing.Tracing) []rivertype.Middleware {
	var out []rivertype.Middleware
	if tr != nil {
		out = append(out, tr.WorkerMiddleware())
	}
	if m != nil {
		out = append(out, m.JobMiddleware())
	}
	return out
}

// Handler is the HTTP handler of every surface.
func (a *App) Handler() http.Handler { return a.Server.Handler() }

// expiryInterval is how often pending actions are looked at for expiry: often enough that
// confirmation.resolved `expired` follows the expiry closely, at most every 30 s. A `YES`
// for an expired code never runs whatever the sweep's timing: the turn checks the expiry.
func expiryInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/4, 100*time.Millisecond), 30*time.Second)
}

// defaultSender is the sender address of notification emails when SMTP_URL names none:
// noreply@ the host of PUBLIC_BASE_URL.
func defaultSender(publicURL string) string {
	host := "localhost"
	if u, err := url.Parse(publicURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	return "noreply@" + host
}
