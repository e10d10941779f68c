package responses

import (
	"strconv"

	"switchboard/apierr"
	"switchboard/llm"
)

// TurnInput is what a turn-creating request asks for, whatever its surface's shape.
type TurnInput struct {
	Instructions []string      // system/developer messages and `instructions`, in order
	Seed         []llm.Message // earlier user/assistant messages, before the turn text
	Text         string        // the last user message
}

// Message is one message of a request, its content flattened to text.
type Message struct {
	Role string
	Text string
}

// SplitMessages applies the rules shared by both /v1 turn surfaces: system and developer
// messages become additional instructions (wherever they stand: they never replace the
// service's prompt, so lifting a late one is safe), the last user message is the turn text,
// and the user and assistant messages before it are the seed history. Messages after the
// last user message and tool messages are not part of the turn. param names the field in
// errors (`input`, `messages`).
func SplitMessages(msgs []Message, param string) (TurnInput, error) {
	var in TurnInput
	last := -1
	for i, m := range msgs {
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return in, apierr.Invalid(param, "missing_user_message", "The request needs at least one message with role `user`: its text is the turn.")
	}
	for i, m := range msgs[:last] {
		switch m.Role {
		case "system", "developer":
			in.Instructions = append(in.Instructions, m.Text)
		case "user":
			in.Seed = append(in.Seed, llm.Message{Role: llm.RoleUser, Text: m.Text})
		case "assistant":
			in.Seed = append(in.Seed, llm.Message{Role: llm.RoleAssistant, Text: m.Text})
		case "tool":
		default:
			return in, apierr.Invalid(param+"["+strconv.Itoa(i)+"].role", "invalid_value", "Unknown role %q: use system, developer, user or assistant.", m.Role)
		}
	}
	in.Text = msgs[last].Text
	return in, nil
}
