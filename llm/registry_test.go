package llm_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/llm"
	"switchboard/llm/llmtest"
)

func families(fake *llmtest.Fake) map[string]llm.FamilyConfig {
	return map[string]llm.FamilyConfig{
		"alpha": {Protocol: fake.Protocol(), BaseURL: fake.URL, APIKey: "alpha-key"},
		"beta":  {Protocol: llm.ProtocolOpenAI},
		"gamma": {Protocol: llm.ProtocolGemini},
	}
}

func ask(t *testing.T, r *llm.Registry, family string) (llm.Result, error) {
	t.Helper()
	c, err := r.For(family)
	require.NoError(t, err)
	return c.Generate(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "ping"}}}, nil)
}

func TestRegistryDevelopment(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	r, err := llm.NewRegistry(families(fake), true, nil, 0)
	require.NoError(t, err)
	require.Equal(t, []string{"alpha", "beta", "gamma"}, r.Families())

	res, err := ask(t, r, "alpha")
	require.NoError(t, err)
	require.Equal(t, "reply to: ping", res.Text)
	require.Equal(t, "alpha-key", fake.Requests()[0].APIKey)

	res, err = ask(t, r, "beta")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Text, "[local responder] No API key is configured for the beta models"))

	_, err = r.For("delta")
	require.ErrorContains(t, err, "delta")
}

func TestRegistryProduction(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewGemini(t)
	r, err := llm.NewRegistry(families(fake), false, nil, 0)
	require.NoError(t, err)

	_, err = ask(t, r, "alpha")
	require.NoError(t, err)

	_, err = ask(t, r, "gamma")
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, llm.ErrNotConfigured, e.Kind)
	require.Equal(t, "no API key is configured for the gamma models: set GAMMA_API_KEY", e.Message)
}

func TestRegistryRejectsUnknownProtocol(t *testing.T) {
	t.Parallel()
	_, err := llm.NewRegistry(map[string]llm.FamilyConfig{"alpha": {Protocol: "soap", APIKey: "k"}}, true, nil, 0)
	require.ErrorContains(t, err, "alpha")
	require.ErrorContains(t, err, "anthropic, openai, gemini")
}

// TestRegistryBoundsEveryCallByItsTimeout: the vendors' HTTP client has no Timeout of its
// own (app.vendorClient), so the registry's adapters must bound each call.
func TestRegistryBoundsEveryCallByItsTimeout(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	r, err := llm.NewRegistry(families(fake), false, &http.Client{}, 50*time.Millisecond)
	require.NoError(t, err)
	fake.Push(llmtest.Reply{Text: "too late", Delay: 10 * time.Second})
	_, err = ask(t, r, "alpha")
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, llm.ErrTimeout, e.Kind)
}
