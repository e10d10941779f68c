package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"switchboard/catalog"
	"switchboard/events"
	"switchboard/httpdeadline"
	"switchboard/llm"
	"switchboard/money"
)

// config is the process configuration, read from the environment (see the README's table).
type config struct {
	DatabaseURL         string
	Addr                string
	AppEnv              string
	BootstrapAPIKey     string
	ModelsFile          string
	KeyRPM              int
	WorkspaceRPM        int
	PublicBaseURL       string
	StartingCreditNano  int64
	Families            map[string]llm.FamilyConfig
	WebhookAllowPrivate bool
	SSEPingInterval     time.Duration
	Delivery            events.DeliveryConfig
	ResponseTTL         time.Duration
	IdempotencyTTL      time.Duration
	MCPAddr             string
	// HTTP holds the servers' time-outs: httpdeadline.Default, not read from the environment
	// (no operator has needed other values; tests set short ones).
	HTTP httpdeadline.Config
}

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

func loadConfig(getenv env) (config, error) {
	c := config{
		DatabaseURL:     getenv("DATABASE_URL"),
		Addr:            getenv.or("ADDR", ":8080"),
		AppEnv:          getenv.or("APP_ENV", "production"),
		BootstrapAPIKey: getenv("BOOTSTRAP_API_KEY"),
		ModelsFile:      getenv("MODELS_FILE"),
		MCPAddr:         getenv("MCP_ADDR"),
		PublicBaseURL:   strings.TrimRight(getenv.or("PUBLIC_BASE_URL", "http://localhost:8080"), "/"),
	}
	c.Families = map[string]llm.FamilyConfig{}
	for _, f := range catalog.Families {
		prefix := strings.ToUpper(string(f)) + "_"
		c.Families[string(f)] = llm.FamilyConfig{
			Protocol: getenv.or(prefix+"PROTOCOL", defaultProtocols[f]),
			BaseURL:  getenv(prefix + "BASE_URL"),
			APIKey:   getenv(prefix + "API_KEY"),
		}
	}
	c.WebhookAllowPrivate = getenv("WEBHOOK_ALLOW_PRIVATE") == "1"
	c.HTTP = httpdeadline.Default
	var err error
	if c.SSEPingInterval, err = duration(getenv, "SSE_PING_INTERVAL", 15*time.Second); err != nil {
		return c, err
	}
	if c.ResponseTTL, err = duration(getenv, "RESPONSE_TTL", 15*time.Minute); err != nil {
		return c, err
	}
	if c.IdempotencyTTL, err = duration(getenv, "IDEMPOTENCY_TTL", 24*time.Hour); err != nil {
		return c, err
	}
	c.Delivery = events.DefaultDeliveryConfig
	if c.Delivery.RetryBase, err = duration(getenv, "WEBHOOK_RETRY_BASE", c.Delivery.RetryBase); err != nil {
		return c, err
	}
	if c.AppEnv != "production" && c.AppEnv != "development" {
		return c, fmt.Errorf("APP_ENV must be production or development, not %q", c.AppEnv)
	}
	if c.KeyRPM, err = positiveInt(getenv, "RATE_LIMIT_KEY_RPM", 600); err != nil {
		return c, err
	}
	if c.WorkspaceRPM, err = positiveInt(getenv, "RATE_LIMIT_WORKSPACE_RPM", 3000); err != nil {
		return c, err
	}
	if c.StartingCreditNano, err = money.ParseUSD(getenv.or("WORKSPACE_STARTING_CREDIT_USD", "5.00")); err != nil || c.StartingCreditNano < 0 {
		return c, fmt.Errorf("WORKSPACE_STARTING_CREDIT_USD: must be a non-negative dollar amount: %v", err)
	}
	return c, nil
}

func (c config) requireDatabase() error {
	if c.DatabaseURL == "" {
		return fmt.Errorf("DATABASE_URL is not set (`make run` starts a local PostgreSQL and sets it for you)")
	}
	return nil
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
