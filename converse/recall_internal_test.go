package converse

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/llm"
)

// searchTurn is a stored turn answered from a search: the visitor's message, the search
// (prefetched: the model's call of the tool, and its result), and the answer.
func searchTurn(n string) []llm.Message {
	return []llm.Message{
		{Role: llm.RoleUser, Text: "question " + n},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call-" + n, Name: "search_knowledge_base", Arguments: json.RawMessage(`{"query":"q"}`)}}},
		{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "call-" + n, Name: "search_knowledge_base", Content: "passages " + n}}},
		{Role: llm.RoleAssistant, Text: "answer " + n},
	}
}

func concat(turns ...[]llm.Message) []llm.Message {
	var out []llm.Message
	for _, t := range turns {
		out = append(out, t...)
	}
	return out
}

// TestTheModelIsGivenThePreviousTurnsSearchesOnly: the searches of the turns before the
// previous one are left out of what the model is given, their answers are not, and the
// messages given are not changed.
func TestTheModelIsGivenThePreviousTurnsSearchesOnly(t *testing.T) {
	recall := recallSearches([]string{"search_knowledge_base"})
	stored := concat(searchTurn("1"), searchTurn("2"), searchTurn("3"))
	before := concat(searchTurn("1"), searchTurn("2"), searchTurn("3"))

	got := recall(stored)
	want := concat(
		[]llm.Message{{Role: llm.RoleUser, Text: "question 1"}, {Role: llm.RoleAssistant, Text: "answer 1"}},
		[]llm.Message{{Role: llm.RoleUser, Text: "question 2"}, {Role: llm.RoleAssistant, Text: "answer 2"}},
		searchTurn("3"))
	require.Equal(t, want, got)
	require.Equal(t, before, stored, "the stored window (a cache's) is not changed")

	// One turn, or a window without searches: as it is.
	require.Equal(t, searchTurn("1"), recall(searchTurn("1")))
	plain := []llm.Message{{Role: llm.RoleUser, Text: "hi"}, {Role: llm.RoleAssistant, Text: "hello"}, {Role: llm.RoleUser, Text: "bye"}, {Role: llm.RoleAssistant, Text: "bye"}}
	require.Equal(t, plain, recall(plain))
}

// TestRecallKeepsWhatIsNotASearch: an assistant message with text beside its search keeps
// the text, another tool's call and result stay (in the same messages as a search's), and
// a search under another name (a renamed tool) is a search when the turn names it.
func TestRecallKeepsWhatIsNotASearch(t *testing.T) {
	stored := []llm.Message{
		{Role: llm.RoleUser, Text: "question 1"},
		{Role: llm.RoleAssistant, Text: "Let me look.", ToolCalls: []llm.ToolCall{
			{ID: "a", Name: "kb", Arguments: json.RawMessage(`{}`)},
			{ID: "b", Name: "apply_label", Arguments: json.RawMessage(`{"label":"sales"}`)}}},
		{Role: llm.RoleTool, ToolResults: []llm.ToolResult{
			{CallID: "a", Name: "kb", Content: "passages"},
			{CallID: "b", Name: "apply_label", Content: `{"success":true}`}}},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "kb_2", Arguments: json.RawMessage(`{}`)}}},
		{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "c", Name: "kb_2", Content: "more passages"}}},
		{Role: llm.RoleAssistant, Text: "answer 1"},
		{Role: llm.RoleUser, Text: "question 2"},
		{Role: llm.RoleAssistant, Text: "answer 2"},
	}
	got := recallSearches([]string{"kb", "kb_2"})(stored)
	require.Equal(t, []llm.Message{
		{Role: llm.RoleUser, Text: "question 1"},
		{Role: llm.RoleAssistant, Text: "Let me look.", ToolCalls: []llm.ToolCall{{ID: "b", Name: "apply_label", Arguments: json.RawMessage(`{"label":"sales"}`)}}},
		{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "b", Name: "apply_label", Content: `{"success":true}`}}},
		{Role: llm.RoleAssistant, Text: "answer 1"},
		{Role: llm.RoleUser, Text: "question 2"},
		{Role: llm.RoleAssistant, Text: "answer 2"},
	}, got)
	require.Len(t, stored[1].ToolCalls, 2, "the stored message keeps its calls")
	require.Len(t, stored[2].ToolResults, 2, "and its results")

	// Under names the turn does not search with, nothing is left out.
	require.Equal(t, stored, recallSearches([]string{"search_knowledge_base"})(stored))
}
