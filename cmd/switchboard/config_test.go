package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/app"
)

func envOf(m map[string]string) env { return func(name string) string { return m[name] } }

// TestLoadConfigIsCompleteWithoutEnvironment: nothing set gives app.DefaultConfig, which is
// what app.New and server.New use as is.
func TestLoadConfigIsCompleteWithoutEnvironment(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	want := app.DefaultConfig()
	want.Families = c.App.Families
	require.Equal(t, want, c.App)
	require.Equal(t, "anthropic", c.App.Families["alpha"].Protocol)
	require.Equal(t, ":8080", c.Addr)
	require.Equal(t, int64(5_000_000_000), c.StartingCreditNano)
}

func TestLoadConfigReadsTheEnvironmentOnce(t *testing.T) {
	t.Parallel()
	c, err := loadConfig(envOf(map[string]string{
		"APP_ENV":                       "development",
		"PUBLIC_BASE_URL":               "https://sb.example.com/",
		"RESPONSE_TTL":                  "2m",
		"IDEMPOTENCY_TTL":               "1h",
		"SSE_PING_INTERVAL":             "5s",
		"RATE_LIMIT_KEY_RPM":            "7",
		"WEBCHAT_VISITOR_RPM":           "40",
		"WEBCHAT_DEPLOYMENT_RPM":        "900",
		"WORKSPACE_STARTING_CREDIT_USD": "1.50",
	}))
	require.NoError(t, err)
	require.True(t, c.App.Server.Development)
	require.Equal(t, "https://sb.example.com", c.App.Server.PublicBaseURL, "the trailing slash goes, here only")
	require.Equal(t, 2*time.Minute, c.App.Responses.TTL)
	require.Equal(t, time.Hour, c.App.Responses.IdempotencyRetention)
	require.Equal(t, 5*time.Second, c.App.Server.SSEPingInterval)
	require.Equal(t, 7, c.App.Server.KeyRPM)
	require.Equal(t, 40, c.App.Server.WebchatVisitorRPM)
	require.Equal(t, 900, c.App.Server.WebchatDeploymentRPM)
	require.Equal(t, int64(1_500_000_000), c.App.DevelopmentCreditNanoUSD)
}

func TestLoadConfigNamesTheBadVariable(t *testing.T) {
	t.Parallel()
	for name, value := range map[string]string{
		"RESPONSE_TTL":             "soon",
		"IDEMPOTENCY_TTL":          "-1s",
		"SSE_PING_INTERVAL":        "0s",
		"WEBHOOK_RETRY_BASE":       "often",
		"RATE_LIMIT_WORKSPACE_RPM": "many",
		"WEBCHAT_DEPLOYMENT_RPM":   "0",
		"PUBLIC_BASE_URL":          "localhost:8080",
		"APP_ENV":                  "staging",
		"COMPLIANCE_VERSION":       "v0",
	} {
		_, err := loadConfig(envOf(map[string]string{name: value}))
		require.ErrorContains(t, err, name)
		require.ErrorContains(t, err, value)
	}
}
