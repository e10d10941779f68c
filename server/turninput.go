package server

import (
	"encoding/json"
	"strconv"
	"strings"

	"switchboard/apierr"
	"switchboard/gen/v1api"
	"switchboard/llm"
)

// turnInput is what a turn-creating request asks for, whatever its surface's shape.
type turnInput struct {
	instructions []string      // system/developer messages, in order
	seed         []llm.Message // earlier user/assistant messages, before the turn text
	text         string        // the last user message
}

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

type roleContent struct {
	role    string
	content *v1api.MessageContent
}

// splitMessages applies the rules shared by both surfaces: system and developer messages
// become additional instructions (wherever they stand: they never replace the service's
// prompt, so lifting a late one is safe), the last user message is the turn text, and the user and assistant
// messages before it are the seed history. Messages after the last user message and tool
// messages are not part of the turn.
func splitMessages(msgs []roleContent, param string) (turnInput, error) {
	var in turnInput
	last := -1
	for i, m := range msgs {
		if m.role == "user" {
			last = i
		}
	}
	if last < 0 {
		return in, apierr.Invalid(param, "missing_user_message", "The request needs at least one message with role `user`: its text is the turn.")
	}
	for i, m := range msgs[:last] {
		switch m.role {
		case "system", "developer":
			in.instructions = append(in.instructions, contentText(m.content))
		case "user":
			in.seed = append(in.seed, llm.Message{Role: llm.RoleUser, Text: contentText(m.content)})
		case "assistant":
			in.seed = append(in.seed, llm.Message{Role: llm.RoleAssistant, Text: contentText(m.content)})
		case "tool":
		default:
			return in, apierr.Invalid(param+"["+strconv.Itoa(i)+"].role", "invalid_value", "Unknown role %q: use system, developer, user or assistant.", m.role)
		}
	}
	in.text = contentText(msgs[last].content)
	return in, nil
}

// responsesInput reads the `input` of POST /v1/responses: a string is the turn text; an
// array of items follows splitMessages.
func responsesInput(input v1api.ResponseInput) (turnInput, error) {
	if s, err := input.AsResponseInput0(); err == nil {
		raw, _ := input.MarshalJSON()
		if len(raw) > 0 && raw[0] == '"' {
			return turnInput{text: s}, nil
		}
	}
	items, err := input.AsResponseInput1()
	if err != nil {
		return turnInput{}, apierr.Invalid("input", "invalid_value", "input must be a string or an array of items.")
	}
	msgs := make([]roleContent, len(items))
	for i, it := range items {
		msgs[i] = roleContent{role: it.Role, content: it.Content}
	}
	return splitMessages(msgs, "input")
}

// chatInput reads the `messages` of POST /v1/chat/completions.
func chatInput(messages []v1api.ChatMessage) (turnInput, error) {
	msgs := make([]roleContent, len(messages))
	for i, m := range messages {
		msgs[i] = roleContent{role: string(m.Role), content: m.Content}
	}
	return splitMessages(msgs, "messages")
}
