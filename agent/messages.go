package agent

import (
	"encoding/json"

	"switchboard/llm"
	"switchboard/store"
)

// storedCall and storedResult are the JSON shapes of tool calls and results in the messages
// table; they are ours, so the llm package's types can change without a migration.
type storedCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type storedResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

func toStored(msgs []llm.Message) ([]store.Message, error) {
	out := make([]store.Message, 0, len(msgs))
	for _, m := range msgs {
		sm := store.Message{Role: string(m.Role), Content: m.Text}
		if len(m.ToolCalls) > 0 {
			calls := make([]storedCall, len(m.ToolCalls))
			for i, c := range m.ToolCalls {
				calls[i] = storedCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
			}
			b, err := json.Marshal(calls)
			if err != nil {
				return nil, err
			}
			sm.ToolCalls = b
		}
		if len(m.ToolResults) > 0 {
			results := make([]storedResult, len(m.ToolResults))
			for i, r := range m.ToolResults {
				results[i] = storedResult{CallID: r.CallID, Name: r.Name, Content: r.Content, IsError: r.IsError}
			}
			b, err := json.Marshal(results)
			if err != nil {
				return nil, err
			}
			sm.ToolResults = b
		}
		out = append(out, sm)
	}
	return out, nil
}

// FromStored reads a stored message back, its tool calls and results decoded: the turn's
// history, and the dashboard's transcripts, read them the same way.
func FromStored(m store.Message) (llm.Message, error) {
	msg := llm.Message{Role: llm.Role(m.Role), Text: m.Content}
	if len(m.ToolCalls) > 0 {
		var calls []storedCall
		if err := json.Unmarshal(m.ToolCalls, &calls); err != nil {
			return msg, err
		}
		for _, c := range calls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
	}
	if len(m.ToolResults) > 0 {
		var results []storedResult
		if err := json.Unmarshal(m.ToolResults, &results); err != nil {
			return msg, err
		}
		for _, r := range results {
			msg.ToolResults = append(msg.ToolResults, llm.ToolResult{CallID: r.CallID, Name: r.Name, Content: r.Content, IsError: r.IsError})
		}
	}
	return msg, nil
}
