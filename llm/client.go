package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Protocols New understands: the vendors' wire protocols, not the vendors' model families.
const (
	ProtocolAnthropic = "anthropic"
	ProtocolOpenAI    = "openai"
	ProtocolGemini    = "gemini"
)

// DefaultMaxTokens is the output limit sent when Request.MaxTokens is 0.
const DefaultMaxTokens = 1024

// Config configures one vendor adapter.
type Config struct {
	Protocol string // anthropic, openai or gemini
	// BaseURL is the endpoint in the form the vendor's SDK expects; empty means the vendor's
	// public endpoint. anthropic: "https://api.anthropic.com" (the SDK adds /v1/messages);
	// openai: "https://api.openai.com/v1" (the SDK adds /chat/completions); gemini:
	// "https://generativelanguage.googleapis.com" (the SDK adds /v1beta/models/...).
	BaseURL    string
	APIKey     string
	HTTPClient *http.Client  // nil: the SDK's default client
	Timeout    time.Duration // bound on one whole call, streaming included; 0: only the caller's context
}

// New returns the adapter for cfg.Protocol.
func New(cfg Config) (Client, error) {
	if err := checkBaseURL(cfg.BaseURL); err != nil {
		return nil, err
	}
	switch cfg.Protocol {
	case ProtocolAnthropic:
		return NewAnthropic(cfg)
	case ProtocolOpenAI:
		return NewOpenAI(cfg)
	case ProtocolGemini:
		return NewGemini(cfg)
	default:
		return nil, fmt.Errorf("llm: unknown protocol %q (valid: %s, %s, %s)",
			cfg.Protocol, ProtocolAnthropic, ProtocolOpenAI, ProtocolGemini)
	}
}

// checkBaseURL rejects a base URL the SDKs would only complain about at the first call.
func checkBaseURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("llm: base URL %q is not an absolute http(s) URL", raw)
	}
	return nil
}

func maxTokens(req Request) int64 {
	if req.MaxTokens > 0 {
		return int64(req.MaxTokens)
	}
	return DefaultMaxTokens
}

// withTimeout bounds a call by the adapter's Timeout, if it has one.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// emit hands one text delta to the caller. Its error aborts the call and is returned as is,
// so the caller can recognise its own error.
func emit(onDelta func(string) error, text string) error {
	if onDelta == nil || text == "" {
		return nil
	}
	return onDelta(text)
}

// checkRequest catches JSON that would otherwise fail deep inside an SDK's encoder, where it
// would look like a network failure.
func checkRequest(req Request) *Error {
	for _, t := range req.Tools {
		if len(t.Parameters) > 0 && !validSchema(t.Parameters) {
			return &Error{Kind: ErrMalformed, Message: fmt.Sprintf("tool %q has a parameter schema that is not valid JSON", t.Name)}
		}
	}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
				return &Error{Kind: ErrMalformed, Message: fmt.Sprintf("tool call %q has arguments that are not valid JSON", c.Name)}
			}
		}
	}
	return nil
}

// arguments returns a tool call's arguments, an empty object when there are none.
func arguments(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// settle checks the tool calls of a finished response and settles its finish reason.
func settle(res *Result) *Error {
	calls := res.ToolCalls[:0]
	for _, c := range res.ToolCalls {
		c.Arguments = arguments(c.Arguments)
		if !json.Valid(c.Arguments) {
			if res.Finish == FinishLength {
				continue // the token limit cut the call short: there is nothing to run
			}
			return &Error{Kind: ErrMalformed, Message: "the model provider sent tool call arguments that are not valid JSON"}
		}
		calls = append(calls, c)
	}
	res.ToolCalls = nil
	if len(calls) > 0 {
		res.ToolCalls = calls
	}
	// Some vendors say "stop" even when the turn ends in tool calls; the caller must run them.
	if len(res.ToolCalls) > 0 && res.Finish == FinishStop {
		res.Finish = FinishToolCalls
	}
	return nil
}

// OpeningUserText stands before a history that starts with the assistant (a deployed agent's
// greeting) on the wires whose APIs want the user to speak first (anthropic, gemini).
const OpeningUserText = "(The conversation begins.)"

// userFirst puts OpeningUserText in front of a history whose first message is the
// assistant's, and joins consecutive assistant messages of plain text (a greeting, then a
// disclosure) into one, so the turns alternate as those APIs expect.
func userFirst(msgs []Message) []Message {
	if len(msgs) == 0 || msgs[0].Role != RoleAssistant {
		return msgs
	}
	out := []Message{{Role: RoleUser, Text: OpeningUserText}}
	for _, m := range msgs {
		last := &out[len(out)-1]
		if m.Role == RoleAssistant && last.Role == RoleAssistant && len(m.ToolCalls) == 0 && len(last.ToolCalls) == 0 {
			last.Text += "\n\n" + m.Text
			continue
		}
		out = append(out, m)
	}
	return out
}
