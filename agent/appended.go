package agent

import (
	"unicode/utf8"

	"switchboard/llm"
	"switchboard/store"
)

// AppendedMessage is a message a turn appended to its conversation, with the row it became:
// what a later read of the row (store.AgentTurnState) would give, so that the turn's caller
// can keep it (converse's history cache) instead of reading and decoding it again.
type AppendedMessage struct {
	store.WrittenMessage
	Message llm.Message // as FromStored reads the row back
	Bytes   int         // the row's size as the history window counts it: content, tool calls, tool results
}

// appendedTurn is what writeMany wrote of a persisted turn: its messages, and the write whose
// rows the commit reports (store.TurnWrite.Written).
type appendedTurn struct {
	msgs  []llm.Message
	write *store.TurnWrite
}

// Appended returns the messages the turn appended to the conversation it continued, in order,
// with their rows; nil when the commit did not report them (a new conversation, an ephemeral
// turn, a turn that did not commit).
func (o *Outcome) Appended() ([]AppendedMessage, error) {
	a := o.appended
	if a == nil || len(a.write.Written) != len(a.msgs) {
		return nil, nil
	}
	out := make([]AppendedMessage, len(a.msgs))
	for i, m := range a.msgs {
		sm := a.write.Messages[i]
		kept, err := readBack(m, sm)
		if err != nil {
			return nil, err
		}
		out[i] = AppendedMessage{WrittenMessage: a.write.Written[i], Message: kept,
			Bytes: len(sm.Content) + len(sm.ToolCalls) + len(sm.ToolResults)}
	}
	return out, nil
}

// readBack is m as FromStored reads back sm, its stored form (toStored). A tool result, a
// knowledge search's few kilobytes, comes back from its JSON exactly as it went in when its
// strings are valid UTF-8 (encoding/json replaces invalid bytes), so it is copied rather than
// decoded; anything else (tool calls, whose arguments the encoder compacts and escapes) is
// decoded as a read would.
func readBack(m llm.Message, sm store.Message) (llm.Message, error) {
	if len(m.ToolCalls) > 0 || !validResults(m.ToolResults) {
		return FromStored(sm)
	}
	out := llm.Message{Role: llm.Role(sm.Role), Text: sm.Content}
	if len(m.ToolResults) > 0 {
		out.ToolResults = append([]llm.ToolResult(nil), m.ToolResults...)
	}
	return out, nil
}

func validResults(rs []llm.ToolResult) bool {
	for _, r := range rs {
		if !utf8.ValidString(r.CallID) || !utf8.ValidString(r.Name) || !utf8.ValidString(r.Content) {
			return false
		}
	}
	return true
}
