package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"switchboard/app"
	"switchboard/catalog"
	"switchboard/compliance"
	"switchboard/httpdeadline"
	"switchboard/money"
	"switchboard/msgapps"
)

// configVar is one row of the README's configuration table. The defaults come from the
// code that applies them (app.DefaultConfig, the constants of config.go), so the table
// cannot drift from them; TestREADMEConfigurationTable holds the README to this output,
// and TestConfigTableNamesEveryVariable holds this table to what loadConfig reads.
type configVar struct {
	names   []string // a row may document a family of variables
	def     string   // markdown; empty when there is no default
	meaning string   // markdown
}

func configRows() []configVar {
	d := app.DefaultConfig()
	rows := []configVar{
		{[]string{"DATABASE_URL"}, "(required; `make run` starts one)",
			"PostgreSQL connection string; `pool_max_conns` sets the pool size (default max(4, CPUs); see docs/benchmarks.md)"},
		{[]string{"ADDR"}, code(defaultAddr), "listen address"},
		{[]string{"APP_ENV"}, code(defaultAppEnv), "`production` or `development` (`make run` sets it)"},
		{[]string{"BOOTSTRAP_API_KEY"}, "", "a key (`sk-svc_` + at least 32 of `[A-Za-z0-9_-]`) seeded into workspace `default`"},
		{[]string{"MODELS_FILE"}, "", "YAML overriding upstream names and prices of allowlisted model ids (see `catalog/catalog.go`)"},
		{[]string{"RATE_LIMIT_KEY_RPM"}, code(strconv.Itoa(d.Server.KeyRPM)), "requests per minute per key (and per address without a valid key)"},
		{[]string{"RATE_LIMIT_WORKSPACE_RPM"}, code(strconv.Itoa(d.Server.WorkspaceRPM)), "requests per minute per workspace"},
		{[]string{"WEBCHAT_VISITOR_RPM"}, code(strconv.Itoa(d.Server.WebchatVisitorRPM)), "webchat messages per minute per visitor (their conversation, or their address before they have one)"},
		{[]string{"WEBCHAT_DEPLOYMENT_RPM"}, code(strconv.Itoa(d.Server.WebchatDeploymentRPM)), "webchat messages per minute per deployment, all its visitors together"},
		{[]string{"PUBLIC_BASE_URL"}, code(d.Server.PublicBaseURL), "the address clients use, for links the server hands out"},
		{[]string{"WORKSPACE_STARTING_CREDIT_USD"}, code(money.FormatUSD(d.DevelopmentCreditNanoUSD)), "credit of a new workspace"},
	}
	for _, f := range catalog.Families {
		prefix := strings.ToUpper(string(f)) + "_"
		rows = append(rows, configVar{[]string{prefix + "API_KEY", prefix + "BASE_URL", prefix + "PROTOCOL"},
			"protocol " + code(defaultProtocols[f]), "the `" + string(f) + "-*` vendor"})
	}
	return append(rows,
		configVar{[]string{"WEBHOOK_ALLOW_PRIVATE"}, "", "`1` lets webhooks and crawls reach http and private addresses (local testing only; `make run` sets it in development)"},
		configVar{[]string{"WEBHOOK_RETRY_BASE"}, code(shortDuration(d.Delivery.RetryBase)), "first retry delay of a failed delivery; doubles per attempt"},
		configVar{[]string{"METER_FLUSH_INTERVAL"}, code(shortDuration(d.MeterFlushInterval)), "how long the spend of an ephemeral turn (chat completion without `conversation`, response with `store: false`) may wait after the answer to be committed in one batch with others; a crash loses at most this much ephemeral spend, a SIGTERM drain nothing (`0s`: commit before answering; at most `1s`; see Write-behind metering)"},
		configVar{[]string{"GOGC"}, code(strconv.Itoa(serveGOGC)) + " (`serve`)", "Go's garbage collector target (Go's own variable; `serve` uses " + strconv.Itoa(serveGOGC) + " instead of Go's 100 when it is not set, which takes 12-15% off the CPU of an ephemeral turn; `GOMEMLIMIT` applies as usual; see docs/benchmarks.md)"},
		configVar{[]string{"GROUP_COMMIT_WINDOW"}, code(shortDuration(d.GroupCommitWindow)), "how long a batch of stored turns (responses, chat completions with a conversation, agents' turns) may gather after its first turn is ready before one transaction commits them all; a batch also closes when every turn in progress has joined it; a stored turn still answers only after its commit (`0s`: a transaction per turn; at most `100ms`; see Group commit)"},
		configVar{[]string{"AUTH_CACHE_TTL"}, code(shortDuration(d.Server.AuthCacheTTL)), "how long a replica keeps an API key's workspace and role in memory; a revocation, a suspension or a workspace running out of credit reaches every replica at once through LISTEN/NOTIFY (`0s`: look the key up on every request)"},
		configVar{[]string{"SSE_PING_INTERVAL"}, code(shortDuration(d.Server.SSEPingInterval)), "keep-alive comment interval of `GET /v1/events`"},
		configVar{[]string{"RESPONSE_TTL"}, code(shortDuration(d.Responses.TTL)), "how long a background response may stay unfinished before it is failed"},
		configVar{[]string{"IDEMPOTENCY_TTL"}, code(shortDuration(d.Responses.IdempotencyRetention)), "how long an `Idempotency-Key` replays its response"},
		configVar{[]string{"CONFIRMATION_TTL"}, code(shortDuration(d.ConfirmationTTL)), "how long a parked risky or spend action waits for `YES <code>` before it expires"},
		configVar{[]string{"REQUEST_BODY_TIMEOUT"}, code(shortDuration(httpdeadline.Default.Body)), "how long a request's body may take to arrive after its headers; a slower one is answered 408 `request_timeout` and its connection closed, so a client cannot hold connections open by trickling bodies (1 MiB in 30s is 35 KB/s)"},
		configVar{[]string{"MCP_ADDR"}, "", "optional second listen address serving only the MCP tool server"},
		configVar{[]string{"METRICS_ADDR"}, "", "optional listen address serving only `GET /metrics` (Prometheus); unset, no metric is kept (see Operations)"},
		configVar{[]string{"PPROF_ADDR"}, "", "optional listen address serving only Go's runtime profiles under `/debug/pprof/` (CPU, heap, allocations, goroutines, execution trace) for `go tool pprof`; an internal address only, never the public one (see Operations)"},
		configVar{[]string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}, "", "traces over OTLP/HTTP to this collector (e.g. `http://otel-collector:4318`); the other standard `OTEL_*` variables apply (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`, ...); unset, no span is made"},
		configVar{[]string{"REDIS_URL"}, "", "`redis://[user:password@]host:port[/db]`: rate limits shared by every replica through Redis; when Redis does not answer, each replica limits in-process (fail open, logged; see Operations)"},
		configVar{[]string{"DRAIN_DELAY"}, code(shortDuration(d.DrainDelay)) + " (`0s` in development)", "after SIGTERM, how long `/ready` answers 503 `draining` while requests are still served, before the server stops accepting and drains"},
		configVar{[]string{"SECRETS_KEY"}, "(production: required once a webhook endpoint exists; development: a throwaway key, printed at start)",
			"base64 of 32 random bytes (`openssl rand -base64 32`); seals webhook signing secrets at rest (AES-256-GCM), and signs webchat visitor tokens with a key derived from it (HKDF), so visitors keep their conversations across restarts and replicas (see Webchat)"},
		configVar{[]string{"SECRETS_KEY_PREVIOUS"}, "", "during a key rotation, the old key(s), comma-separated: they only open secrets, never seal (see Security)"},
		configVar{[]string{"SMTP_URL"}, "", "outgoing mail for escalation notifications: `smtp://[user:pass@]host[:port]` (STARTTLS when offered) or `smtps://…`; `?from=` sets the sender (default `noreply@` the host of `PUBLIC_BASE_URL`)"},
		configVar{[]string{"COMPLIANCE_VERSION"}, code(d.ComplianceVersion), "version of the outbound compliance acknowledgment workspaces must accept (its text is `compliance/outbound-<version>.md`, embedded; known: " + code(strings.Join(compliance.Versions(), "`, `")) + "); a new version needs a new acceptance (see Settings)"},
		configVar{[]string{"TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN"}, "", "the carrier account (twilio-go): SMS channels (inbound webhooks are checked against `TWILIO_AUTH_TOKEN`, replies sent through it), campaign sends and phone numbers; unset, SMS channels need setup, campaigns cannot start and phone-number routes answer 409 `sms_provider_not_configured`"},
		configVar{[]string{"CHANNEL_WORKERS"}, code(strconv.Itoa(d.ChannelWorkers)), "how many replies to inbound messages (SMS) one replica works at once; each mostly waits on the model (see Channels)"},
		configVar{[]string{"TWILIO_BASE_URL"}, "the SDK's `https://api.twilio.com`", "where the SMS provider's API is reached (a regional proxy, or a fake in tests)"},
		configVar{[]string{"META_GRAPH_URL"}, code(msgapps.DefaultGraphURL), "where Meta's Graph API is reached, with its version: WhatsApp (`msgapp_1`) and Messenger (`msgapp_2`) sends (a fake in tests; see Messaging apps)"},
		configVar{[]string{"INSTAGRAM_GRAPH_URL"}, code(msgapps.DefaultInstagramURL), "where the Instagram API with Instagram Login is reached, with its version: Instagram (`msgapp_3`) sends"},
		configVar{[]string{"TELEGRAM_API_URL"}, code(msgapps.DefaultTelegramURL), "where the Telegram Bot API is reached (`msgapp_4`: getMe, setWebhook, sendMessage; a local Bot API server, or a fake in tests)"},
		configVar{[]string{"SWITCHBOARD_URL"}, "`http://localhost` and the port of `ADDR`", "`switchboard webhooks listen` only: the server to register with"},
		configVar{[]string{"SWITCHBOARD_API_KEY"}, "`BOOTSTRAP_API_KEY`, else the development key", "`switchboard webhooks listen` only: the key it registers with"},
	)
}

func code(s string) string { return "`" + s + "`" }

// shortDuration writes a duration as people write it: 15m, 24h, 5s (not 15m0s).
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// configTable is the markdown table of configRows.
func configTable() string {
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	for _, r := range configRows() {
		names := make([]string, len(r.names))
		for i, n := range r.names {
			names[i] = code(n)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", strings.Join(names, ", "), r.def, r.meaning)
	}
	return b.String()
}

func configCommand(args []string, stdout io.Writer) error {
	if len(args) != 1 || args[0] != "table" {
		return usageError{"config needs a subcommand: table"}
	}
	_, err := io.WriteString(stdout, configTable())
	return err
}
