package agent

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/llm"
	"switchboard/store"
)

// TestAKeptMessageIsWhatAReadWouldDecode: what a turn keeps of a message it wrote (readBack)
// is what FromStored decodes from its stored form, byte for byte: for tool results copied
// rather than decoded, and for what the JSON encoder changes (compacted, escaped arguments,
// invalid UTF-8).
func TestAKeptMessageIsWhatAReadWouldDecode(t *testing.T) {
	msgs := []llm.Message{
		{Role: llm.RoleUser, Text: "Are you open on <Sundays> & holidays?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "k1", Name: "search_knowledge_base",
			Arguments: json.RawMessage(`{ "query" : "open <Sunday> & \u00e9t\u00e9" }`)}}},
		{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "k1", Name: "search_knowledge_base",
			Content: `{"results":[{"text":"Open <b>Sunday</b> & Monday, \u2028 10:00 \"sharp\""}]}`}}},
		{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "k2", Name: "x", Content: "bad \xff byte", IsError: true}}},
		{Role: llm.RoleAssistant, Text: "We open at 10:00 on Sunday. 😀"},
	}
	stored, err := toStored(msgs)
	require.NoError(t, err)
	for i, m := range msgs {
		want, err := FromStored(stored[i])
		require.NoError(t, err)
		got, err := readBack(m, stored[i])
		require.NoError(t, err)
		require.Equal(t, want, got, "message %d", i)
	}
	require.NotEqual(t, msgs[1].ToolCalls[0].Arguments, mustRead(t, msgs[1], stored[1]).ToolCalls[0].Arguments,
		"the arguments as stored (compacted, escaped), not as the model sent them")
}

func mustRead(t *testing.T, m llm.Message, s store.Message) llm.Message {
	t.Helper()
	got, err := readBack(m, s)
	require.NoError(t, err)
	return got
}
