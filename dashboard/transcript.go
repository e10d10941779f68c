package dashboard

import (
	"bytes"
	"encoding/json"

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

type storedCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type storedResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Content string `json:"content"`
	IsError bool   `json:"is_error"`
}

// transcriptOf pairs each tool call with its result (the tool message after it answers it by
// call id) so a call reads as one collapsed item; tool messages whose results were all paired
// are not shown again.
func transcriptOf(msgs []store.MessageWithUsage) []transcriptMessage {
	results := map[string]storedResult{}
	for _, m := range msgs {
		var rs []storedResult
		if len(m.ToolResults) > 0 && json.Unmarshal(m.ToolResults, &rs) == nil {
			for _, r := range rs {
				results[r.CallID] = r
			}
		}
	}
	paired := map[string]bool{}
	var out []transcriptMessage
	for _, m := range msgs {
		tm := transcriptMessage{Role: m.Role, Content: m.Content}
		if u := m.Usage; u != nil {
			tm.Usage = &usageLine{Model: u.Model, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Cost: "$" + money.FormatUSD(u.CostNanoUSD)}
		}
		if calls, ok := decodeCalls(m.ToolCalls); ok {
			for _, c := range calls {
				r, found := results[c.ID]
				paired[c.ID] = found
				tm.Calls = append(tm.Calls, toolCall{Name: c.Name, Arguments: indent(c.Arguments), Result: indentText(r.Content), HasResult: found, IsError: r.IsError})
			}
		} else if hasJSON(m.ToolCalls) {
			tm.Raw = string(m.ToolCalls)
		}
		if m.Role == "tool" && allPaired(m.ToolResults, paired) && tm.Content == "" {
			continue
		}
		if m.Role == "tool" && tm.Raw == "" && hasJSON(m.ToolResults) {
			tm.Raw = string(m.ToolResults)
		}
		out = append(out, tm)
	}
	return out
}

func hasJSON(b json.RawMessage) bool { return len(b) > 0 && string(b) != "null" }

func decodeCalls(b json.RawMessage) ([]storedCall, bool) {
	var calls []storedCall
	if !hasJSON(b) || json.Unmarshal(b, &calls) != nil || len(calls) == 0 {
		return nil, false
	}
	return calls, true
}

// allPaired reports whether every result of a tool message answers a call shown above.
func allPaired(b json.RawMessage, paired map[string]bool) bool {
	var rs []storedResult
	if !hasJSON(b) || json.Unmarshal(b, &rs) != nil || len(rs) == 0 {
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
