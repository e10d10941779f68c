package server

import (
	"encoding/json"
	"strings"

	"switchboard/apierr"
	"switchboard/gen/v1api"
	"switchboard/responses"
)

// Translation of the turn surfaces' message shapes into the domain's messages; the rules
// that split them into a turn live in responses.SplitMessages.

// contentText flattens a message content: a string, null, or an array of parts of which
// the text parts (`text`, `input_text`, `output_text`) count; other parts (images, audio) are
// not read by the agent and are skipped.
func contentText(c *v1api.MessageContent) string {
	if c == nil {
		return ""
	}
	raw, _ := c.MarshalJSON()
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	parts, err := c.AsMessageContent1()
	if err != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		switch p["type"] {
		case "text", "input_text", "output_text":
			if t, ok := p["text"].(string); ok {
				texts = append(texts, t)
			}
		}
	}
	return strings.Join(texts, "\n")
}

// responsesInput reads the `input` of POST /v1/responses: a string is the turn text; an
// array of items follows responses.SplitMessages, leading system/developer items lifted.
func responsesInput(input v1api.ResponseInput) (responses.TurnInput, error) {
	if s, err := input.AsResponseInput0(); err == nil {
		raw, _ := input.MarshalJSON()
		if len(raw) > 0 && raw[0] == '"' {
			return responses.TurnInput{Text: s}, nil
		}
	}
	items, err := input.AsResponseInput1()
	if err != nil {
		return responses.TurnInput{}, apierr.Invalid("input", "invalid_value", "input must be a string or an array of items.")
	}
	msgs := make([]responses.Message, len(items))
	for i, it := range items {
		msgs[i] = responses.Message{Role: it.Role, Text: contentText(it.Content)}
	}
	return responses.SplitMessages(msgs, "input", responses.LiftLeading)
}

// chatInput reads the `messages` of POST /v1/chat/completions; its rule lifts every
// system/developer message.
func chatInput(messages []v1api.ChatMessage) (responses.TurnInput, error) {
	msgs := make([]responses.Message, len(messages))
	for i, m := range messages {
		msgs[i] = responses.Message{Role: string(m.Role), Text: contentText(m.Content)}
	}
	return responses.SplitMessages(msgs, "messages", responses.LiftAll)
}
