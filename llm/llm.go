// Package llm is the one interface through which Switchboard calls a language model, with one
// adapter per vendor wire protocol (anthropic, openai, gemini) built on the vendors' official
// SDKs, and the local responder for development without vendor accounts. Nothing
// vendor-specific leaks out of this package.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
)

// Role of a message in the history.
type Role string

// The roles of a history.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries the results of the tool calls of the assistant message before it.
	RoleTool Role = "tool"
)

// Message is one entry of the conversation sent to the model.
type Message struct {
	Role        Role
	Text        string
	ToolCalls   []ToolCall   // on assistant messages that called tools
	ToolResults []ToolResult // on tool messages
}

// ToolCall is the model asking to run a tool.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage // a JSON object
}

// ToolResult answers one ToolCall.
type ToolResult struct {
	CallID  string
	Name    string
	Content string // JSON or text given back to the model
	IsError bool
}

// Tool is a tool the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments, an object schema
}

// Request is one model call.
type Request struct {
	Model     string // the vendor's (upstream) model name
	System    string
	Messages  []Message
	Tools     []Tool
	MaxTokens int // 0 means the adapter's default
	// Temperature is the sampling temperature (0 to 2); nil leaves the vendor's default.
	Temperature *float64
}

// FinishReason says why the model stopped.
type FinishReason string

// The finish reasons, as the OpenAI wire format names them.
const (
	FinishStop          FinishReason = "stop"
	FinishLength        FinishReason = "length"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishContentFilter FinishReason = "content_filter"
)

// Usage is the real token consumption the vendor reported.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens}
}

// Result is what one model call produced.
type Result struct {
	Text      string
	ToolCalls []ToolCall
	Finish    FinishReason
	Usage     Usage
}

// Client makes model calls. Generate streams text deltas to onDelta as they arrive from the
// vendor (onDelta may be nil; an error from it aborts the call). On failure it returns an
// *Error and, in Result.Usage, whatever usage was already consumed so it can be metered.
type Client interface {
	Generate(ctx context.Context, req Request, onDelta func(string) error) (Result, error)
}

// ErrorKind classifies an upstream failure.
type ErrorKind string

// The kinds of upstream failure; each becomes the error code a client sees.
const (
	ErrTimeout       ErrorKind = "timeout"
	ErrCancelled     ErrorKind = "cancelled" // the caller gave up (its context was canceled): nobody waits for the answer
	ErrRateLimited   ErrorKind = "rate_limited"
	ErrUpstream      ErrorKind = "upstream_error"   // 5xx or another refusal by the vendor
	ErrMalformed     ErrorKind = "malformed_stream" // a response or stream we could not read
	ErrNotConfigured ErrorKind = "vendor_not_configured"
)

// Error is a failed model call.
type Error struct {
	Kind    ErrorKind
	Status  int    // the vendor's HTTP status, when there was one
	Message string // safe to show to the caller: no keys, no internal addresses
	Err     error  // the underlying cause, for logs
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes a cancelled call context.Canceled whatever error the SDK wrapped the cancellation
// in, so callers tell a caller who gave up from a failure with errors.Is alone.
func (e *Error) Is(target error) bool { return e.Kind == ErrCancelled && target == context.Canceled }
