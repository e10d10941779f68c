package agent_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/catalog"
	"switchboard/llm"
)

// TestHistoryWindowFollowsTheModel: the window is the model's context less the answer's
// limit, nine tenths of it at three bytes a token, less what the turn sends besides history.
func TestHistoryWindowFollowsTheModel(t *testing.T) {
	small := catalog.Model{ContextTokens: 10_000}
	plain := agent.HistoryWindow(small, agent.Turn{System: "s"})
	require.Equal(t, int64((10_000-llm.DefaultMaxTokens)*9/10*3-1), plain)
	require.Equal(t, plain-100, agent.HistoryWindow(small, agent.Turn{System: "s", Text: strings.Repeat("x", 100)}))
	require.Greater(t, agent.HistoryWindow(small, agent.Turn{System: "s", MaxTokens: 100}), plain, "a smaller answer leaves more room")
	big := catalog.Model{ContextTokens: 1_000_000}
	require.Greater(t, agent.HistoryWindow(big, agent.Turn{System: "s"}), plain)
	require.Zero(t, agent.HistoryWindow(small, agent.Turn{System: strings.Repeat("x", 100_000)}), "never negative")
	def, ok := catalog.Default().Lookup(catalog.DefaultModel)
	require.True(t, ok)
	require.Positive(t, def.ContextTokens, "every catalog model has a window")
}
