package llm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
)

// A turn nobody watches token by token (a chat completion or response requested without
// `stream`, a background turn) asks the vendor for the whole reply at once instead of a
// stream: one JSON body, decoded once, instead of an event stream of a dozen frames each
// decoded on its own. Streaming only to join the pieces again cost both sides: decoding the
// chunks was the largest single item of an ephemeral turn's CPU (docs/benchmarks.md, issue 17).
// The request is the streamed one without "stream" (and, for OpenAI, without stream_options,
// which its API refuses on a request that does not stream); the reply is mapped by the same
// accumulators as the stream's, so a reply means the same whichever way it came.

// openaiCompletion is one chat completion, holding only what a turn reads.
type openaiCompletion struct {
	Choices []struct {
		Index   int64 `json:"index"`
		Message struct {
			Content   string           `json:"content"`
			ToolCalls []openaiToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openaiUsage `json:"usage"`
}

type openaiToolCall struct {
	ID       string              `json:"id"`
	Function openaiFunctionDelta `json:"function"`
}

// complete is Generate without onDelta: the SDK's client posts the request without
// "stream", and the whole reply is decoded into openaiCompletion, then read as one chunk.
func (c *openaiClient) complete(ctx context.Context, req Request) (Result, error) {
	var raw *http.Response
	var err error
	if body, ok := openaiBody(req, false); ok {
		err = c.client.Post(ctx, "chat/completions", body, &raw)
	} else {
		err = c.client.Post(ctx, "chat/completions", openaiParams(req, false), &raw)
	}
	if err != nil {
		status, refused := openaiStatus(err)
		return Result{}, failure{err: err, status: status, refused: refused}.toError(ctx)
	}
	var reply openaiCompletion
	if err := decodeReply(raw, &reply); err != nil {
		return Result{}, failure{err: err, started: true}.toError(ctx)
	}
	var chunk openaiChunk
	for _, choice := range reply.Choices {
		ch := openaiChoice{Index: choice.Index, FinishReason: choice.FinishReason}
		ch.Delta.Content = choice.Message.Content
		for i, tc := range choice.Message.ToolCalls { // a whole reply's calls are in wire order
			ch.Delta.ToolCalls = append(ch.Delta.ToolCalls, openaiToolCallDelta{Index: int64(i), ID: tc.ID, Function: tc.Function})
		}
		chunk.Choices = append(chunk.Choices, ch)
	}
	chunk.Usage = reply.Usage
	var acc openaiAccumulator
	acc.add(&chunk)
	res := acc.result()
	if acc.finish == "" {
		return res, incomplete()
	}
	return res, settleErr(&res)
}

// complete is Generate without onDelta: the SDK's client posts the request without
// "stream", and the whole message is read as a stream's message_start carrying all of it.
func (c *anthropicClient) complete(ctx context.Context, req Request) (Result, error) {
	var raw *http.Response
	var err error
	if body, ok := anthropicBody(req, false); ok {
		err = c.client.Post(ctx, "v1/messages", body, &raw)
	} else {
		err = c.client.Post(ctx, "v1/messages", anthropicParams(req), &raw)
	}
	if err != nil {
		status, refused := anthropicStatus(err)
		return Result{}, failure{err: err, status: status, refused: refused}.toError(ctx)
	}
	var msg anthropicStartMessage
	if err := decodeReply(raw, &msg); err != nil {
		return Result{}, failure{err: err, started: true}.toError(ctx)
	}
	var acc anthropicAccumulator
	for _, e := range []anthropicEvent{{Type: "message_start", Message: &msg}, {Type: "message_stop"}} {
		_ = acc.add(&e) // only deltas can be inconsistent
	}
	res := acc.result()
	if acc.stopReason == "" {
		return res, incomplete()
	}
	return res, settleErr(&res)
}

// decodeReply reads a whole reply body and decodes it into v.
func decodeReply(raw *http.Response, v any) error {
	defer raw.Body.Close()
	body, err := io.ReadAll(raw.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// incomplete is the error for a whole reply without the vendor's finish reason.
func incomplete() *Error {
	return malformed("the model provider's response ended before the reply was complete", nil)
}

// settleErr is settle's error as an error: nil when there is none (not a nil *Error).
func settleErr(res *Result) error {
	if err := settle(res); err != nil {
		return err
	}
	return nil
}
