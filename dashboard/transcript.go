package dashboard

import (
	"bytes"
	"encoding/json"

	"switchboard/agent"
	"switchboard/llm"
	"switchboard/money"
	"switchboard/store"
)

// transcriptMessage is a message as an operator reads it: an assistant reply with the usage
// of its turn (when one is recorded), and the tool calls it made, each with its result.
type transcriptMessage struct {
	Role, Content string
	Usage         *usageLine
	Calls         []toolCall
	// Raw is tool data that could not be read as calls and results: shown as stored.
	Raw string
}

// usageLine is the usage of a turn, formatted. Latency is not recorded, so none is shown.
type usageLine struct {
	Model                     string
	InputTokens, OutputTokens int64
	// Cost is exact: a turn costs fractions of a cent, which cents would show as $0.00.
	Cost string
}

// toolCall is one call the model made, with the result the tool gave back.
type toolCall struct {
	Name, Arguments, Result string
	HasResult, IsError      bool
}

// transcriptOf pairs each tool call with its result (the tool message after it answers it by
// call id) so a call reads as one collapsed item; tool messages whose results were all paired
// are not shown again.
func transcriptOf(msgs []store.MessageWithUsage) []transcriptMessage {
	decoded := make([]llm.Message, len(msgs))
	readable := make([]bool, len(msgs))
	results := map[string]llm.ToolResult{}
	for i, m := range msgs {
		msg, err := agent.FromStored(store.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolResults: m.ToolResults})
		decoded[i], readable[i] = msg, err == nil
		for _, r := range msg.ToolResults {
			results[r.CallID] = r
		}
	}
	paired := map[string]bool{}
	var out []transcriptMessage
	for i, m := range msgs {
		tm := transcriptMessage{Role: m.Role, Content: m.Content}
		if u := m.Usage; u != nil {
			tm.Usage = &usageLine{Model: u.Model, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Cost: "$" + money.FormatUSD(u.CostNanoUSD)}
		}
		for _, c := range decoded[i].ToolCalls {
			r, found := results[c.ID]
			paired[c.ID] = found
			tm.Calls = append(tm.Calls, toolCall{Name: c.Name, Arguments: indent(c.Arguments), Result: indentText(r.Content), HasResult: found, IsError: r.IsError})
		}
		if !readable[i] {
			tm.Raw = string(m.ToolCalls) + string(m.ToolResults) // not ours to read: shown as stored
		}
		if m.Role == "tool" && readable[i] && allPaired(decoded[i].ToolResults, paired) && tm.Content == "" {
			continue
		}
		if m.Role == "tool" && tm.Raw == "" && len(decoded[i].ToolResults) > 0 {
			tm.Raw = string(m.ToolResults) // results of calls not shown above
		}
		out = append(out, tm)
	}
	return out
}

// allPaired reports whether every result of a tool message answers a call shown above.
func allPaired(rs []llm.ToolResult, paired map[string]bool) bool {
	if len(rs) == 0 {
		return false
	}
	for _, r := range rs {
		if !paired[r.CallID] {
			return false
		}
	}
	return true
}

// indent pretty-prints JSON for reading; anything else is shown as it is.
func indent(b json.RawMessage) string {
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") != nil {
		return string(b)
	}
	return buf.String()
}

// indentText pretty-prints a result that is JSON text, and leaves plain text alone.
func indentText(s string) string { return indent(json.RawMessage(s)) }
