package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/llm"
)

func TestLocalResponder(t *testing.T) {
	t.Parallel()
	client := llm.NewLocal("beta")
	req := llm.Request{
		System: "12345678", // 8 characters
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "first"},
			{Role: llm.RoleAssistant, Text: "ok"},
			{Role: llm.RoleUser, Text: "hello there"},
		},
		Tools: []llm.Tool{{Name: "never_called"}},
	}
	var deltas []string
	res, err := client.Generate(context.Background(), req, collect(&deltas))
	require.NoError(t, err)

	want := "[local responder] No API key is configured for the beta models, so this is a local reply. You said: hello there"
	require.Equal(t, want, res.Text)
	require.Equal(t, want, strings.Join(deltas, ""))
	require.Len(t, deltas, len(strings.Fields(want)), "one delta per word")
	require.Equal(t, llm.FinishStop, res.Finish)
	require.Empty(t, res.ToolCalls)
	// 8+5+2+11 = 26 characters -> 7 tokens; the reply's characters / 4, rounded up.
	require.Equal(t, llm.Usage{InputTokens: 7, OutputTokens: int64((len(want) + 3) / 4)}, res.Usage)

	again, err := client.Generate(context.Background(), req, nil)
	require.NoError(t, err)
	require.Equal(t, res, again, "deterministic")
}

func TestLocalResponderOnDeltaError(t *testing.T) {
	t.Parallel()
	stop := errors.New("stop")
	res, err := llm.NewLocal("alpha").Generate(context.Background(),
		llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}},
		func(string) error { return stop })
	require.ErrorIs(t, err, stop)
	require.Equal(t, "[local ", res.Text, "the first word only")
	require.Positive(t, res.Usage.InputTokens)
}

func TestUnconfigured(t *testing.T) {
	t.Parallel()
	_, err := llm.NewUnconfigured("gamma", "GAMMA_API_KEY").Generate(context.Background(), llm.Request{}, nil)
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, llm.ErrNotConfigured, e.Kind)
	require.Equal(t, "no API key is configured for the gamma models: set GAMMA_API_KEY", e.Message)
}
