package llm

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
)

// Decoding one stream event (a text delta, as most events of a reply are): the SDK's type,
// and the lean type the adapters decode it into.
var (
	benchOpenAIChunk    = []byte(`{"id":"chatcmpl-mock","object":"chat.completion.chunk","created":1700000000,"model":"beta-5.4","choices":[{"index":0,"delta":{"content":"lorem ipsum "},"finish_reason":null}]}`)
	benchAnthropicEvent = []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lorem ipsum "}}`)
)

func BenchmarkDecodeOpenAIChunk(b *testing.B) {
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c openai.ChatCompletionChunk
			_ = json.Unmarshal(benchOpenAIChunk, &c)
		}
	})
	b.Run("lean", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c openaiChunk
			_ = json.Unmarshal(benchOpenAIChunk, &c)
		}
	})
}

func BenchmarkDecodeAnthropicEvent(b *testing.B) {
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var e anthropic.MessageStreamEventUnion
			_ = json.Unmarshal(benchAnthropicEvent, &e)
		}
	})
	b.Run("lean", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var e anthropicEvent
			_ = json.Unmarshal(benchAnthropicEvent, &e)
		}
	})
}
