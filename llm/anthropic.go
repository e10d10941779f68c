package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"
)

// anthropicClient speaks the Anthropic Messages API.
type anthropicClient struct {
	client  anthropic.Client
	timeout time.Duration
}

// NewAnthropic returns the adapter for the Anthropic Messages API.
func NewAnthropic(cfg Config) (Client, error) {
	if err := checkBaseURL(cfg.BaseURL); err != nil {
		return nil, err
	}
	opts := []option.RequestOption{
		// Key and endpoint come from cfg only, never from ANTHROPIC_* variables or profiles.
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0), // the turn pipeline decides about retries
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &anthropicClient{client: anthropic.NewClient(opts...), timeout: cfg.Timeout}, nil
}

func (c *anthropicClient) Generate(ctx context.Context, req Request, onDelta func(string) error) (Result, error) {
	if err := checkRequest(req); err != nil {
		return Result{}, err
	}
	ctx, cancel := withTimeout(ctx, c.timeout)
	defer cancel()
	if onDelta == nil {
		return c.complete(ctx, req)
	}

	// The SDK's NewStreaming, with the events decoded into anthropicEvent (see there): the
	// same request, path, headers and error handling, through the SDK's client and stream.
	var raw *http.Response
	var err error
	if body, ok := anthropicBody(req, true); ok {
		err = c.client.Post(ctx, "v1/messages", body, &raw)
	} else {
		err = c.client.Post(ctx, "v1/messages", anthropicParams(req), &raw, option.WithJSONSet("stream", true))
	}
	stream := ssestream.NewStream[anthropicEvent](ssestream.NewDecoder(raw), err)
	defer stream.Close()

	var acc anthropicAccumulator
	started, done := false, false
	for stream.Next() {
		event := stream.Current()
		started = true
		if err := acc.add(&event); err != nil {
			return acc.result(), malformed("the model provider's response stream was inconsistent", err)
		}
		switch event.Type {
		case "content_block_delta":
			if event.Delta.Type == "text_delta" {
				if err := emit(onDelta, event.Delta.Text); err != nil {
					return acc.result(), err
				}
			}
		case "message_stop":
			done = true
		}
	}
	res := acc.result()
	if err := stream.Err(); err != nil {
		status, refused := anthropicStatus(err)
		return res, failure{err: err, status: status, refused: refused, started: started}.toError(ctx)
	}
	if !done {
		return res, truncated()
	}
	if err := settle(&res); err != nil {
		return res, err
	}
	return res, nil
}

func anthropicParams(req Request) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: maxTokens(req),
		Messages:  anthropicMessages(userFirst(req.Messages)),
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	if req.Temperature != nil {
		// Anthropic's scale stops at 1; a blueprint's 0 to 2 is clamped to it.
		p.Temperature = anthropic.Float(min(*req.Temperature, 1))
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, anthropicTools.get(t))
	}
	return p
}

// anthropicTools keeps each tool as the SDK encodes it: a turn sends the same tools again and
// again, and the SDK's encoding of a schema (every keyword an extra field, set one by one)
// was an eighth of an ephemeral turn's CPU (docs/benchmarks.md).
var anthropicTools = toolCache[anthropic.ToolUnionParam]{encode: func(t Tool) (anthropic.ToolUnionParam, bool) {
	raw, err := anthropicTool(t).MarshalJSON()
	if err != nil {
		return anthropicTool(t), false
	}
	return param.Override[anthropic.ToolUnionParam](json.RawMessage(raw)), true
}}

func anthropicMessages(msgs []Message) []anthropic.MessageParam {
	var out []anthropic.MessageParam
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			out = append(out, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Text)))
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" { // the API rejects empty text blocks
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, arguments(tc.Arguments), tc.Name))
			}
			if len(blocks) > 0 {
				out = append(out, anthropic.NewAssistantMessage(blocks...))
			}
		case RoleTool:
			// Tool results travel back as a user turn of tool_result blocks.
			var blocks []anthropic.ContentBlockParamUnion
			for _, r := range m.ToolResults {
				blocks = append(blocks, anthropicToolResult(r))
			}
			out = append(out, anthropic.NewUserMessage(blocks...))
		}
	}
	return out
}

func anthropicToolResult(r ToolResult) anthropic.ContentBlockParamUnion {
	if r.Content != "" {
		return anthropic.NewToolResultBlock(r.CallID, r.Content, r.IsError)
	}
	// An empty text block would be rejected; a result without content is allowed.
	block := anthropic.ToolResultBlockParam{ToolUseID: r.CallID}
	if r.IsError {
		block.IsError = anthropic.Bool(true)
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &block}
}

// anthropicTool passes the JSON Schema through as input_schema. The SDK models only
// properties and required; every other keyword rides along as an extra field.
func anthropicTool(t Tool) anthropic.ToolUnionParam {
	var schema anthropic.ToolInputSchemaParam
	var fields map[string]any
	if len(t.Parameters) > 0 && json.Unmarshal(t.Parameters, &fields) == nil {
		delete(fields, "type") // always "object", which the SDK sends itself
		schema.ExtraFields = fields
	}
	tool := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
	if t.Description != "" {
		tool.Description = anthropic.String(t.Description)
	}
	return anthropic.ToolUnionParam{OfTool: &tool}
}

func anthropicFinish(reason anthropic.StopReason) FinishReason {
	switch reason {
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return FinishLength
	case anthropic.StopReasonToolUse:
		return FinishToolCalls
	case anthropic.StopReasonRefusal:
		return FinishContentFilter
	default: // end_turn, stop_sequence, pause_turn
		return FinishStop
	}
}

// anthropicStatus reports the HTTP status of an API error. An error event inside a 200
// stream carries only a type, which stands for the status the API would have used.
func anthropicStatus(err error) (status int, refused bool) {
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		return 0, false
	}
	if apiErr.StatusCode >= 400 {
		return apiErr.StatusCode, true
	}
	switch apiErr.Type() {
	case "rate_limit_error":
		return 429, true
	case "overloaded_error":
		return 529, true
	case "api_error":
		return 500, true
	}
	return 0, true
}
