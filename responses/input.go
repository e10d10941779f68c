package responses

import (
	"strconv"

	"switchboard/apierr"
	"switchboard/llm"
)

// TurnInput is what a turn-creating request asks for, whatever its surface's shape.
type TurnInput struct {
	Instructions []string      // lifted system/developer messages and `instructions`, in order
	Seed         []llm.Message // earlier messages, before the turn text, in their order
	Text         string        // the last user message
}

// Message is one message of a request, its content flattened to text.
type Message struct {
	Role string
	Text string
}

// Lift says which system/developer messages become additional instructions: the two /v1
// surfaces word the rule differently, and each follows its own.
type Lift int

const (
	// LiftLeading is the Responses rule: "leading `system`/`developer` items are lifted into
	// additional instructions". A later one stays in the history in its place.
	LiftLeading Lift = iota
	// LiftAll is the chat completions rule: "`system`/`developer` messages become additional
	// instructions", wherever they stand (they never replace the service's prompt).
	LiftAll
)

// SplitMessages applies the rules of the /v1 turn surfaces: system and developer messages
// are lifted into additional instructions as lift says, the last user message is the turn
// text, and the messages before it are the seed history. An item after the last user message
// is refused (400 naming its index): the turn answers the last user message, so anything
// after it could only be dropped, and dropping it silently would hide a client's mistake.
// Tool messages carry no call they answer here, so they are skipped. param names the field
// in errors (`input`, `messages`).
func SplitMessages(msgs []Message, param string, lift Lift) (TurnInput, error) {
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
	if last < len(msgs)-1 {
		return in, apierr.Invalid(itemParam(param, last+1), "after_last_user_message",
			"%s[%d] (role %q) comes after the last user message, %s[%d], which is the turn's text: nothing after it would be read. End the %s with the user message.",
			param, last+1, msgs[last+1].Role, param, last, param)
	}
	leading := true
	for i, m := range msgs[:last] {
		instruction := m.Role == "system" || m.Role == "developer"
		if instruction && (leading || lift == LiftAll) {
			in.Instructions = append(in.Instructions, m.Text)
			continue
		}
		leading = false
		msg, err := historyMessage(m, itemParam(param, i))
		if err != nil {
			return in, err
		}
		if msg != nil {
			in.Seed = append(in.Seed, *msg)
		}
	}
	in.Text = msgs[last].Text
	return in, nil
}

// InPlacePrefix marks a system or developer message kept in the history in its place. The
// vendors' APIs take system text only ahead of the conversation, so it travels as a user-side
// message that says what it was.
func InPlacePrefix(role string) string { return "[" + role + " message] " }

// historyMessage is one message before the turn text as history, nil for a skipped tool message.
func historyMessage(m Message, param string) (*llm.Message, error) {
	switch m.Role {
	case "user":
		return &llm.Message{Role: llm.RoleUser, Text: m.Text}, nil
	case "assistant":
		return &llm.Message{Role: llm.RoleAssistant, Text: m.Text}, nil
	case "system", "developer":
		return &llm.Message{Role: llm.RoleUser, Text: InPlacePrefix(m.Role) + m.Text}, nil
	case "tool":
		return nil, nil
	default:
		return nil, apierr.Invalid(param+".role", "invalid_value", "Unknown role %q: use system, developer, user or assistant.", m.Role)
	}
}

func itemParam(param string, i int) string { return param + "[" + strconv.Itoa(i) + "]" }
