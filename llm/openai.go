package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
)

// openaiClient speaks the OpenAI Chat Completions API.
type openaiClient struct {
	client  openai.Client
	timeout time.Duration
}

// NewOpenAI returns the adapter for the OpenAI Chat Completions API.
func NewOpenAI(cfg Config) (Client, error) {
	if err := checkBaseURL(cfg.BaseURL); err != nil {
		return nil, err
	}
	// Options given here are applied after the SDK's OPENAI_* environment defaults, so the
	// key and the endpoint always come from cfg.
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0), // the turn pipeline decides about retries
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	// The SDK's default client is http.DefaultClient; either way the body goes out with the
	// headers (wholeBodies).
	opts = append(opts, option.WithHTTPClient(withWholeBodies(cfg.HTTPClient)))
	return &openaiClient{client: openai.NewClient(opts...), timeout: cfg.Timeout}, nil
}

func (c *openaiClient) Generate(ctx context.Context, req Request, onDelta func(string) error) (Result, error) {
	if err := checkRequest(req); err != nil {
		return Result{}, err
	}
	ctx, cancel := withTimeout(ctx, c.timeout)
	defer cancel()
	if onDelta == nil {
		return c.complete(ctx, req)
	}

	// The SDK's NewStreaming, with the chunks decoded into openaiChunk (see there): the same
	// request, path, headers and error handling, through the SDK's client and stream.
	var raw *http.Response
	var err error
	if body, ok := openaiBody(req, true); ok {
		err = c.client.Post(ctx, "chat/completions", body, &raw)
	} else {
		err = c.client.Post(ctx, "chat/completions", openaiParams(req, true), &raw, option.WithJSONSet("stream", true))
	}
	stream := ssestream.NewStream[openaiChunk](ssestream.NewDecoder(raw), err)
	defer stream.Close()

	var acc openaiAccumulator
	started := false
	for stream.Next() {
		started = true
		chunk := stream.Current()
		delta := acc.add(&chunk)
		if err := emit(onDelta, delta); err != nil {
			return acc.result(), err
		}
	}
	res := acc.result()
	if err := stream.Err(); err != nil {
		status, refused := openaiStatus(err)
		return res, failure{err: err, status: status, refused: refused, started: started}.toError(ctx)
	}
	// The SDK hides whether [DONE] arrived; a finish_reason is the sign the reply is complete.
	if acc.finish == "" {
		return res, truncated()
	}
	if err := settle(&res); err != nil {
		return res, err
	}
	return res, nil
}

func openaiParams(req Request, stream bool) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:               req.Model,
		Messages:            openaiMessages(req),
		MaxCompletionTokens: openai.Int(maxTokens(req)),
	}
	if stream {
		// Without include_usage a streamed completion reports no token counts at all; the
		// API refuses stream_options on a request that does not stream.
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, openaiTools.get(t))
	}
	return p
}

func openaiMessages(req Request) []openai.ChatCompletionMessageParamUnion {
	var out []openai.ChatCompletionMessageParamUnion
	if req.System != "" {
		out = append(out, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			out = append(out, openai.UserMessage(m.Text))
		case RoleAssistant:
			out = append(out, openaiAssistant(m))
		case RoleTool:
			// One role=tool message per result. The wire has no error flag: the content
			// itself has to say that the tool failed.
			for _, r := range m.ToolResults {
				out = append(out, openai.ToolMessage(r.Content, r.CallID))
			}
		}
	}
	return out
}

func openaiAssistant(m Message) openai.ChatCompletionMessageParamUnion {
	var a openai.ChatCompletionAssistantMessageParam
	if m.Text != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = openai.String(m.Text)
	}
	for _, tc := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: tc.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      tc.Name,
					Arguments: string(arguments(tc.Arguments)),
				},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// openaiTools keeps each tool as the SDK encodes it, so that a turn neither parses its schema
// into a map nor encodes it again (see anthropicTools).
var openaiTools = toolCache[openai.ChatCompletionToolUnionParam]{encode: func(t Tool) (openai.ChatCompletionToolUnionParam, bool) {
	raw, err := openaiTool(t).MarshalJSON()
	if err != nil {
		return openaiTool(t), false
	}
	return param.Override[openai.ChatCompletionToolUnionParam](json.RawMessage(raw)), true
}}

func openaiTool(t Tool) openai.ChatCompletionToolUnionParam {
	def := shared.FunctionDefinitionParam{Name: t.Name}
	if t.Description != "" {
		def.Description = openai.String(t.Description)
	}
	var schema map[string]any
	if len(t.Parameters) > 0 && json.Unmarshal(t.Parameters, &schema) == nil {
		def.Parameters = schema
	}
	return openai.ChatCompletionFunctionTool(def)
}

// openaiAccumulator gathers the streamed chunks of the first choice.
type openaiAccumulator struct {
	text   strings.Builder
	calls  []openaiCall
	byIdx  map[int64]int // tool call index on the wire -> position in calls
	finish string
	usage  Usage
}

type openaiCall struct {
	id, name string
	args     []byte // not a strings.Builder: calls grows by append, which copies its elements
}

// openaiChunk is one chunk of a streamed chat completion, holding only what a turn reads.
//
// The SDK's own type (openai.ChatCompletionChunk) decodes every field and keeps each one's
// raw JSON for its metadata; that decoding was over a quarter of an ephemeral turn's CPU
// (docs/benchmarks.md, issue 17). The request, its headers, the transport, the SSE framing,
// [DONE] and the API's errors (HTTP status, in-stream error objects) stay the SDK's: only
// the chunks' payloads are decoded into this type, by the SDK's own ssestream.Stream
// (TestOpenAIChunkMatchesTheSDK holds the two together).
type openaiChunk struct {
	Choices []openaiChoice `json:"choices"`
	Usage   *openaiUsage   `json:"usage"`
}

type openaiChoice struct {
	Index int64 `json:"index"`
	Delta struct {
		Content   string                `json:"content"`
		ToolCalls []openaiToolCallDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

type openaiUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

type openaiToolCallDelta struct {
	Index    int64               `json:"index"`
	ID       string              `json:"id"`
	Function openaiFunctionDelta `json:"function"`
}

type openaiFunctionDelta struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// add takes one chunk and returns its text delta.
func (a *openaiAccumulator) add(chunk *openaiChunk) string {
	if chunk.Usage != nil {
		a.usage = Usage{InputTokens: chunk.Usage.PromptTokens, OutputTokens: chunk.Usage.CompletionTokens}
	}
	var delta string
	for i := range chunk.Choices {
		choice := &chunk.Choices[i]
		if choice.Index != 0 {
			continue // we never ask for more than one choice
		}
		delta = choice.Delta.Content
		a.text.WriteString(delta)
		for _, tc := range choice.Delta.ToolCalls {
			a.addToolCall(tc)
		}
		if choice.FinishReason != "" {
			a.finish = choice.FinishReason
		}
	}
	return delta
}

// addToolCall merges one tool call fragment: the first carries id and name, the following
// ones pieces of the arguments, all under the same index.
func (a *openaiAccumulator) addToolCall(tc openaiToolCallDelta) {
	if a.byIdx == nil {
		a.byIdx = map[int64]int{}
	}
	pos, ok := a.byIdx[tc.Index]
	if !ok {
		pos = len(a.calls)
		a.byIdx[tc.Index] = pos
		a.calls = append(a.calls, openaiCall{})
	}
	call := &a.calls[pos]
	if tc.ID != "" {
		call.id = tc.ID
	}
	if tc.Function.Name != "" {
		call.name = tc.Function.Name
	}
	call.args = append(call.args, tc.Function.Arguments...)
}

func (a *openaiAccumulator) result() Result {
	res := Result{Text: a.text.String(), Finish: openaiFinish(a.finish), Usage: a.usage}
	for i := range a.calls {
		c := &a.calls[i]
		res.ToolCalls = append(res.ToolCalls, ToolCall{ID: c.id, Name: c.name, Arguments: append(json.RawMessage(nil), c.args...)})
	}
	return res
}

func openaiFinish(reason string) FinishReason {
	switch reason {
	case "length":
		return FinishLength
	case "tool_calls", "function_call":
		return FinishToolCalls
	case "content_filter":
		return FinishContentFilter
	default:
		return FinishStop
	}
}

// openaiStatus reports the HTTP status of an API error; an error object inside the stream
// has none.
func openaiStatus(err error) (status int, refused bool) {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode, true
	}
	var streamErr *ssestream.StreamError
	return 0, errors.As(err, &streamErr)
}
