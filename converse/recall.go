package converse

import (
	"slices"

	"switchboard/llm"
)

// recallSearches is what a deployed agent's model is given of its conversation's stored
// window (agent.Turn.Recall): every message, but the knowledge searches of the turns before
// the previous one. Those passages (five of up to 850 characters each, about 1,200 tokens)
// were context for the message that searched; each message comes with a search of its own
// (Service.prefetch), and the model can search again. Sent again on every later turn, they
// made most of a long conversation's input tokens (and the vendor's bill, and its time to
// the first token). The previous turn's searches stay: a follow-up such as "and on
// Sundays?" searches its own words, which may not find the passages it follows up on.
//
// The turns are counted by the user messages of the window: the searches after its last
// user message are the previous turn's. A search is a call of one of names (the turn's
// search_knowledge_base tools) and the tool result answering it; an assistant message left
// with neither text nor calls, and a tool message left without results, are left out. The
// stored messages are not changed: the transcript, the dashboard and the exports keep every
// search.
func recallSearches(names []string) func([]llm.Message) []llm.Message {
	return func(msgs []llm.Message) []llm.Message {
		last := -1
		for i, m := range msgs {
			if m.Role == llm.RoleUser {
				last = i
			}
		}
		if last <= 0 || !searchedBefore(msgs[:last], names) {
			return msgs
		}
		out := make([]llm.Message, 0, len(msgs))
		for _, m := range msgs[:last] {
			if m, ok := withoutSearches(m, names); ok {
				out = append(out, m)
			}
		}
		return append(out, msgs[last:]...)
	}
}

// searchedBefore reports whether msgs hold a search: most windows hold none to leave out
// but the previous turn's, and are then given as they are.
func searchedBefore(msgs []llm.Message, names []string) bool {
	for _, m := range msgs {
		if slices.ContainsFunc(m.ToolCalls, func(c llm.ToolCall) bool { return slices.Contains(names, c.Name) }) ||
			slices.ContainsFunc(m.ToolResults, func(r llm.ToolResult) bool { return slices.Contains(names, r.Name) }) {
			return true
		}
	}
	return false
}

// withoutSearches is m without its calls of names and their results, in slices of its own;
// false when nothing is left of a message that had some.
func withoutSearches(m llm.Message, names []string) (llm.Message, bool) {
	calls := slices.DeleteFunc(slices.Clone(m.ToolCalls), func(c llm.ToolCall) bool { return slices.Contains(names, c.Name) })
	results := slices.DeleteFunc(slices.Clone(m.ToolResults), func(r llm.ToolResult) bool { return slices.Contains(names, r.Name) })
	if len(calls) == len(m.ToolCalls) && len(results) == len(m.ToolResults) {
		return m, true
	}
	m.ToolCalls, m.ToolResults = nilIfEmpty(calls), nilIfEmpty(results)
	switch m.Role {
	case llm.RoleTool:
		return m, len(m.ToolResults) > 0
	default:
		return m, m.Text != "" || len(m.ToolCalls) > 0
	}
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
