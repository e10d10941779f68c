package llm

import (
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"
)

// anthropicEvent is one event of the Messages API's stream, holding only what a turn reads.
//
// The SDK's own event type (anthropic.MessageStreamEventUnion) decodes every field of every
// event kind and keeps each field's raw JSON for its metadata; that decoding was a fifth of
// an ephemeral turn's CPU (docs/benchmarks.md, issue 17). The request, its headers, the
// transport, the SSE framing and the API's errors (HTTP status and in-stream "error" events)
// stay the SDK's: only the events' payloads are decoded into this type, by the SDK's own
// ssestream.Stream. anthropicAccumulator folds them as anthropic.Message.Accumulate does
// (TestAnthropicAccumulatorMatchesTheSDK holds the two together).
type anthropicEvent struct {
	Type         string                 `json:"type"`
	Message      *anthropicStartMessage `json:"message"`
	Index        int64                  `json:"index"`
	ContentBlock *anthropicBlock        `json:"content_block"`
	Delta        anthropicDelta         `json:"delta"`
	Usage        anthropicDeltaUsage    `json:"usage"`
}

type anthropicStartMessage struct {
	Content    []anthropicBlock `json:"content"`
	StopReason string           `json:"stop_reason"`
	Usage      struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthropicDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	StopReason  string `json:"stop_reason"`
}

// anthropicDeltaUsage is message_delta's usage: cumulative totals; the ones absent keep the
// value message_start gave (output_tokens is always sent).
type anthropicDeltaUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// anthropicAccumulator is the message as far as the stream has told it.
type anthropicAccumulator struct {
	blocks     []anthropicBlock
	stopReason string
	usage      anthropicStartMessage
}

// add folds one event in, with anthropic.Message.Accumulate's rules and errors.
func (a *anthropicAccumulator) add(e *anthropicEvent) error {
	switch e.Type {
	case "message_start":
		*a = anthropicAccumulator{}
		if e.Message != nil {
			a.blocks = e.Message.Content
			for i := range a.blocks {
				if string(a.blocks[i].Input) == "null" {
					a.blocks[i].Input = nil
				}
			}
			a.stopReason = e.Message.StopReason
			a.usage.Usage = e.Message.Usage
		}
	case "message_delta":
		a.stopReason = e.Delta.StopReason
		u := &a.usage.Usage
		u.OutputTokens = e.Usage.OutputTokens
		if e.Usage.InputTokens != nil {
			u.InputTokens = *e.Usage.InputTokens
		}
		if e.Usage.CacheCreationInputTokens != nil {
			u.CacheCreationInputTokens = *e.Usage.CacheCreationInputTokens
		}
		if e.Usage.CacheReadInputTokens != nil {
			u.CacheReadInputTokens = *e.Usage.CacheReadInputTokens
		}
	case "content_block_start":
		if e.Index != int64(len(a.blocks)) {
			return fmt.Errorf("received event of type %s for content block at index %d, expected index %d", e.Type, e.Index, len(a.blocks))
		}
		var b anthropicBlock
		if e.ContentBlock != nil {
			b = *e.ContentBlock
		}
		if string(b.Input) == "null" {
			b.Input = nil // the SDK reads a null input as none
		}
		a.blocks = append(a.blocks, b)
	case "content_block_delta":
		if err := a.checkIndex(e); err != nil {
			return err
		}
		b := &a.blocks[e.Index]
		switch e.Delta.Type {
		case "text_delta":
			b.Text += e.Delta.Text
		case "input_json_delta":
			if e.Delta.PartialJSON != "" {
				if string(b.Input) == "{}" {
					b.Input = json.RawMessage(e.Delta.PartialJSON)
				} else {
					b.Input = append(b.Input, e.Delta.PartialJSON...)
				}
			}
		}
	case "content_block_stop":
		if err := a.checkIndex(e); err != nil {
			return err
		}
		a.blocks[e.Index].closeInput()
	case "message_stop":
		for i := range a.blocks {
			a.blocks[i].closeInput()
		}
	}
	return nil
}

// closeInput empties the input a cut-off tool call left that is not JSON, as the SDK does
// when it closes a block.
func (b *anthropicBlock) closeInput() {
	if len(b.Input) > 0 && !json.Valid(b.Input) {
		b.Input = json.RawMessage(`{}`)
	}
}

func (a *anthropicAccumulator) checkIndex(e *anthropicEvent) error {
	if e.Index < 0 || e.Index >= int64(len(a.blocks)) {
		return fmt.Errorf("received event of type %s for content block at index %d but there are only %d content blocks", e.Type, e.Index, len(a.blocks))
	}
	return nil
}

// result reads what has been accumulated so far; on failure it is the partial result.
func (a *anthropicAccumulator) result() Result {
	var res Result
	for _, b := range a.blocks {
		switch b.Type {
		case "text":
			res.Text += b.Text
		case "tool_use":
			res.ToolCalls = append(res.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: append(json.RawMessage(nil), b.Input...)})
		}
	}
	u := a.usage.Usage
	// Cached prompt tokens are still prompt tokens consumed by the call.
	res.Usage = Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, OutputTokens: u.OutputTokens}
	res.Finish = anthropicFinish(anthropic.StopReason(a.stopReason))
	return res
}
