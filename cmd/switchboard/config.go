package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"switchboard/app"
	"switchboard/catalog"
	"switchboard/compliance"
	"switchboard/httpdeadline"
	"switchboard/llm"
	"switchboard/money"
	"switchboard/secrets"
	"switchboard/tracing"
)

// config is the process configuration, read from the environment (see the README's table).
// loadConfig returns it complete and validated; nothing downstream applies defaults.
type config struct {
	DatabaseURL        string
	Addr               string
	AppEnv             string
	BootstrapAPIKey    string
	ModelsFile         string
	MCPAddr            string
	MetricsAddr        string // METRICS_ADDR: serves GET /metrics; empty: no metrics at all
	PprofAddr          string // PPROF_ADDR: serves Go's profiles under /debug/pprof/; empty: none
	StartingCreditNano int64
	App                app.Config // what the process is wired with (app.New)
	// Secrets seals webhook secrets (SECRETS_KEY, and SECRETS_KEY_PREVIOUS to open during a
	// rotation); nil when SECRETS_KEY is not set in production.
	Secrets *secrets.Keyring
	// ThrowawaySecretsKey is the base64 key generated for this run in development when
	// SECRETS_KEY is not set; serve prints it.
	ThrowawaySecretsKey string
	// DefaultGOGC is true when GOGC is not set: serve then sets the collector's target to
	// serveGOGC (the runtime applies a GOGC that is set by itself, before main).
	DefaultGOGC bool
	// HTTP holds the servers' time-outs: httpdeadline.Default, of which only the body's is
	// read from the environment (REQUEST_BODY_TIMEOUT; tests set short ones).
	HTTP httpdeadline.Config
}

// Defaults of the variables that are not part of app.Config (the README's table shows
// them, from here: see configtable.go).
const (
	defaultAddr   = ":8080"
	defaultAppEnv = "production"
	// serveGOGC is the garbage collector's target of `serve` when GOGC is not set: a turn
	// allocates ~70 KB that is garbage when it answers, and with Go's 100 the collector ran
	// several times a second under load for a heap of a few MB (12-15% less CPU per
	// ephemeral turn at 400; docs/benchmarks.md, issue 17). GOMEMLIMIT still bounds it.
	serveGOGC = 400
)

// defaultProtocols is the wire protocol of each vendor family unless *_PROTOCOL says otherwise.
var defaultProtocols = map[catalog.Family]string{catalog.Alpha: "anthropic", catalog.Beta: "openai", catalog.Gamma: "gemini"}

func (c config) development() bool { return c.AppEnv == "development" }

// env reads one environment variable; os.Getenv in the binary, a map in tests.
type env func(string) string

func (e env) or(name, def string) string {
	if v := e(name); v != "" {
		return v
	}
	return def
}

// loadConfig reads the environment over app.DefaultConfig; a bad value is an error naming
// its variable.
func loadConfig(getenv env) (config, error) {
	c := config{
		DatabaseURL:     getenv("DATABASE_URL"),
		Addr:            getenv.or("ADDR", defaultAddr),
		AppEnv:          getenv.or("APP_ENV", defaultAppEnv),
		BootstrapAPIKey: getenv("BOOTSTRAP_API_KEY"),
		ModelsFile:      getenv("MODELS_FILE"),
		MCPAddr:         getenv("MCP_ADDR"),
		MetricsAddr:     getenv("METRICS_ADDR"),
		PprofAddr:       getenv("PPROF_ADDR"),
		DefaultGOGC:     getenv("GOGC") == "",
		App:             app.DefaultConfig(),
		HTTP:            httpdeadline.Default,
	}
	if c.AppEnv != "production" && c.AppEnv != "development" {
		return c, fmt.Errorf("APP_ENV must be production or development, not %q", c.AppEnv)
	}
	a := &c.App
	a.Server.Development = c.development()
	a.Families = families(getenv)
	a.WebhookAllowPrivate = getenv("WEBHOOK_ALLOW_PRIVATE") == "1"
	a.SMTPURL = getenv("SMTP_URL")
	a.ComplianceVersion = getenv.or("COMPLIANCE_VERSION", a.ComplianceVersion)
	a.SMS.AccountSID, a.SMS.AuthToken, a.SMS.BaseURL = getenv("TWILIO_ACCOUNT_SID"), getenv("TWILIO_AUTH_TOKEN"), getenv("TWILIO_BASE_URL")
	a.MsgApps.GraphURL, a.MsgApps.InstagramURL = getenv("META_GRAPH_URL"), getenv("INSTAGRAM_GRAPH_URL")
	a.MsgApps.TelegramURL = getenv("TELEGRAM_API_URL")
	if _, err := compliance.Text(a.ComplianceVersion); err != nil {
		return c, err
	}
	a.RedisURL = getenv("REDIS_URL")
	a.Metrics = c.MetricsAddr != ""
	a.Tracing = tracing.Enabled(getenv)
	if c.development() {
		a.DrainDelay = 0 // no load balancer to tell; Ctrl-C in `make run` stops at once
	}
	var err error
	if a.Server.PublicBaseURL, err = baseURL(getenv, "PUBLIC_BASE_URL", a.Server.PublicBaseURL); err != nil {
		return c, err
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{
		{"SSE_PING_INTERVAL", &a.Server.SSEPingInterval},
		{"RESPONSE_TTL", &a.Responses.TTL},
		{"CONFIRMATION_TTL", &a.ConfirmationTTL},
		{"IDEMPOTENCY_TTL", &a.Responses.IdempotencyRetention},
		{"WEBHOOK_RETRY_BASE", &a.Delivery.RetryBase},
		{"DRAIN_DELAY", &a.DrainDelay},
		{"REQUEST_BODY_TIMEOUT", &c.HTTP.Body},
	} {
		if *d.to, err = duration(getenv, d.name, *d.to); err != nil {
			return c, err
		}
	}
	if v := getenv("CHANNEL_WORKERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return c, fmt.Errorf("CHANNEL_WORKERS must be a number of workers from 1 to 10000, not %q", v)
		}
		a.ChannelWorkers = n
	}
	if v := getenv("METER_FLUSH_INTERVAL"); v != "" {
		if a.MeterFlushInterval, err = time.ParseDuration(v); err != nil || a.MeterFlushInterval < 0 || a.MeterFlushInterval > time.Second {
			return c, fmt.Errorf("METER_FLUSH_INTERVAL must be a duration from 0s (commit before answering) to 1s, such as 10ms, not %q", v)
		}
	}
	if v := getenv("GROUP_COMMIT_WINDOW"); v != "" {
		if a.GroupCommitWindow, err = time.ParseDuration(v); err != nil || a.GroupCommitWindow < 0 || a.GroupCommitWindow > 100*time.Millisecond {
			return c, fmt.Errorf("GROUP_COMMIT_WINDOW must be a duration from 0s (a transaction per stored turn) to 100ms, such as 2ms, not %q", v)
		}
	}
	if v := getenv("AUTH_CACHE_TTL"); v != "" {
		if a.Server.AuthCacheTTL, err = time.ParseDuration(v); err != nil || a.Server.AuthCacheTTL < 0 {
			return c, fmt.Errorf("AUTH_CACHE_TTL must be a duration such as 2s (0s: no cache), not %q", v)
		}
	}
	if a.Server.KeyRPM, err = positiveInt(getenv, "RATE_LIMIT_KEY_RPM", a.Server.KeyRPM); err != nil {
		return c, err
	}
	if a.Server.WorkspaceRPM, err = positiveInt(getenv, "RATE_LIMIT_WORKSPACE_RPM", a.Server.WorkspaceRPM); err != nil {
		return c, err
	}
	if a.Server.WebchatVisitorRPM, err = positiveInt(getenv, "WEBCHAT_VISITOR_RPM", a.Server.WebchatVisitorRPM); err != nil {
		return c, err
	}
	if a.Server.WebchatDeploymentRPM, err = positiveInt(getenv, "WEBCHAT_DEPLOYMENT_RPM", a.Server.WebchatDeploymentRPM); err != nil {
		return c, err
	}
	if c.StartingCreditNano, err = money.ParseUSD(getenv.or("WORKSPACE_STARTING_CREDIT_USD", money.FormatUSD(a.DevelopmentCreditNanoUSD))); err != nil || c.StartingCreditNano < 0 {
		return c, fmt.Errorf("WORKSPACE_STARTING_CREDIT_USD: must be a non-negative dollar amount: %v", err)
	}
	a.DevelopmentCreditNanoUSD = c.StartingCreditNano
	if c.Secrets, c.ThrowawaySecretsKey, err = secretsKeyring(getenv, c.development()); err != nil {
		return c, err
	}
	return c, nil
}

// secretsKeyring reads SECRETS_KEY and SECRETS_KEY_PREVIOUS (comma-separated keys that
// only open, during a rotation). In development without SECRETS_KEY it makes a throwaway
// key, returned in base64 so serve can print it; in production it returns no keyring, and
// serve refuses to start if any webhook endpoint exists.
func secretsKeyring(getenv env, development bool) (*secrets.Keyring, string, error) {
	var previous []secrets.Key
	for _, v := range strings.Split(getenv("SECRETS_KEY_PREVIOUS"), ",") {
		if strings.TrimSpace(v) == "" {
			continue
		}
		k, err := secrets.ParseKey("SECRETS_KEY_PREVIOUS", v)
		if err != nil {
			return nil, "", err
		}
		previous = append(previous, k)
	}
	if v := getenv("SECRETS_KEY"); v != "" {
		k, err := secrets.ParseKey("SECRETS_KEY", v)
		if err != nil {
			return nil, "", err
		}
		return secrets.NewKeyring(k, previous...), "", nil
	}
	if len(previous) > 0 {
		return nil, "", fmt.Errorf("SECRETS_KEY_PREVIOUS is set but SECRETS_KEY is not: set SECRETS_KEY to the new key")
	}
	if !development {
		return nil, "", nil
	}
	k, encoded, err := secrets.GenerateKey()
	if err != nil {
		return nil, "", err
	}
	return secrets.NewKeyring(k), encoded, nil
}

// families is the vendor configuration of each model family (*_PROTOCOL, *_BASE_URL, *_API_KEY).
func families(getenv env) map[string]llm.FamilyConfig {
	out := map[string]llm.FamilyConfig{}
	for _, f := range catalog.Families {
		prefix := strings.ToUpper(string(f)) + "_"
		out[string(f)] = llm.FamilyConfig{
			Protocol: getenv.or(prefix+"PROTOCOL", defaultProtocols[f]),
			BaseURL:  getenv(prefix + "BASE_URL"),
			APIKey:   getenv(prefix + "API_KEY"),
		}
	}
	return out
}

func (c config) requireDatabase() error {
	if c.DatabaseURL == "" {
		return fmt.Errorf("DATABASE_URL is not set (`make run` starts a local PostgreSQL and sets it for you)")
	}
	return nil
}

// baseURL reads an absolute http(s) address and drops its trailing slash, once for every
// link built from it.
func baseURL(getenv env, name, def string) (string, error) {
	v := getenv.or(name, def)
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s must be an absolute http or https address such as https://switchboard.example.com, not %q", name, v)
	}
	return strings.TrimRight(v, "/"), nil
}

func positiveInt(getenv env, name string, def int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s must be a positive integer, not %q", name, v)
	}
	return n, nil
}

func duration(getenv env, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s must be a positive duration such as 15s, not %q", name, v)
	}
	return d, nil
}
