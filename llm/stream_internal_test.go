package llm

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/require"
)

// The adapters decode the vendors' stream events into lean types of their own (the SDKs'
// decoding was a fifth to a quarter of an ephemeral turn's CPU). These tests hold the lean
// decoding to the SDKs' own: the same event payloads, decoded and accumulated both ways,
// must give the same Result.

// sdkAnthropicResult is what the adapter read from the SDK's accumulated message before.
func sdkAnthropicResult(msg *anthropic.Message) Result {
	var res Result
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			res.Text += b.Text
		case "tool_use":
			res.ToolCalls = append(res.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: append(json.RawMessage(nil), b.Input...)})
		}
	}
	u := msg.Usage
	res.Usage = Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, OutputTokens: u.OutputTokens}
	res.Finish = anthropicFinish(msg.StopReason)
	return res
}

func TestAnthropicAccumulatorMatchesTheSDK(t *testing.T) {
	t.Parallel()
	start := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":1,"cache_creation_input_tokens":3,"cache_read_input_tokens":4}}}`
	streams := map[string][]string{
		"text": {
			start,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", world \u00e9 \"q\""}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}`,
			`{"type":"message_stop"}`,
		},
		"text then tool calls, usage overwritten": {
			start,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"I will "}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"look."}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"lookup","input":{}}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"q\": \"a"}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"b\"}"}}`,
			`{"type":"content_block_stop","index":1}`,
			`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"noargs","input":{}}}`,
			`{"type":"content_block_stop","index":2}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":20,"output_tokens":30,"cache_read_input_tokens":0}}`,
			`{"type":"message_stop"}`,
		},
		"cut-off tool input, max tokens": {
			start,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"lookup","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\": \"a"}}`,
			`{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":5}}`,
			`{"type":"message_stop"}`,
		},
		"no message_delta usage": {
			start,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`,
			`{"type":"message_delta","delta":{"stop_reason":"refusal"}}`,
		},
		"unread block kinds": {
			start,
			`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"answer"}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`,
			`{"type":"message_stop"}`,
		},
		"nulls and escapes": {
			`{"type":"message_start","message":{"id":"msg_1","content":[{"type":"text","text":"pre\u00e9\n"}],"stop_reason":"end_turn","usage":{"input_tokens":2,"output_tokens":null}}}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t\"1","name":"n","input":null}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\\b \ud83d\ude00"}}`,
			`{"type":"message_delta","delta":{"stop_reason":null},"usage":{"input_tokens":null,"output_tokens":3,"cache_creation_input_tokens":5}}`,
			`{"type":"message_stop"}`,
		},
		"a block out of order": {
			start,
			`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		},
		"a delta for no block": {
			start,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`,
		},
	}
	for name, events := range streams {
		var msg anthropic.Message
		var acc anthropicAccumulator
		var sdkErr, leanErr error
		for _, data := range events {
			var sdkEvent anthropic.MessageStreamEventUnion
			require.NoError(t, json.Unmarshal([]byte(data), &sdkEvent), name)
			var event anthropicEvent
			require.NoError(t, json.Unmarshal([]byte(data), &event), name)
			require.Equal(t, sdkEvent.Type, event.Type, name)
			require.Equal(t, sdkEvent.Delta.Type, event.Delta.Type, name)
			require.Equal(t, sdkEvent.Delta.Text, event.Delta.Text, name)
			if sdkErr == nil {
				sdkErr = msg.Accumulate(sdkEvent)
			}
			if leanErr == nil {
				leanErr = acc.add(&event)
			}
		}
		if sdkErr != nil {
			require.EqualError(t, leanErr, sdkErr.Error(), name)
			continue
		}
		require.NoError(t, leanErr, name)
		want, got := sdkAnthropicResult(&msg), acc.result()
		require.Equal(t, want, got, name)
	}
}

// sdkOpenAIAdd is what the adapter took from the SDK's chunk before.
func sdkOpenAIAdd(a *openaiAccumulator, chunk openai.ChatCompletionChunk) string {
	if chunk.JSON.Usage.Valid() {
		a.usage = Usage{InputTokens: chunk.Usage.PromptTokens, OutputTokens: chunk.Usage.CompletionTokens}
	}
	var delta string
	for _, choice := range chunk.Choices {
		if choice.Index != 0 {
			continue
		}
		delta = choice.Delta.Content
		a.text.WriteString(delta)
		for _, tc := range choice.Delta.ToolCalls {
			var d openaiToolCallDelta
			d.Index, d.ID, d.Function.Name, d.Function.Arguments = tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments
			a.addToolCall(d)
		}
		if choice.FinishReason != "" {
			a.finish = choice.FinishReason
		}
	}
	return delta
}

func TestOpenAIChunkMatchesTheSDK(t *testing.T) {
	t.Parallel()
	head := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	streams := map[string][]string{
		"text with usage": {
			head,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" \u00e9 \"q\""},"logprobs":null,"finish_reason":null}],"usage":null}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}`,
		},
		"tool calls": {
			head,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":""}}]},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":"}}]},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"other","arguments":"{}"}}]},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a\"}"}}]},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
		},
		"nulls and escapes": {
			`{"id":"c1","choices":[{"index":0,"delta":{"content":"\u00e9\n\"q\" \ud83d\ude00","tool_calls":null},"finish_reason":null}],"usage":null}`,
			`{"id":"c1","choices":null,"usage":{"prompt_tokens":1,"completion_tokens":null}}`,
			`{"id":"c1","choices":[{"index":0,"delta":null,"finish_reason":"stop"}]}`,
		},
		"other choices ignored, null content": {
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":1,"delta":{"content":"no"},"finish_reason":"length"},{"index":0,"delta":{"content":null,"refusal":null},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"yes"},"finish_reason":"length"}]}`,
		},
	}
	for name, chunks := range streams {
		var sdkAcc, leanAcc openaiAccumulator
		for _, data := range chunks {
			var sdkChunk openai.ChatCompletionChunk
			require.NoError(t, json.Unmarshal([]byte(data), &sdkChunk), name)
			var chunk openaiChunk
			require.NoError(t, json.Unmarshal([]byte(data), &chunk), name)
			require.Equal(t, sdkOpenAIAdd(&sdkAcc, sdkChunk), leanAcc.add(&chunk), name)
		}
		require.Equal(t, sdkAcc.finish, leanAcc.finish, name)
		require.Equal(t, sdkAcc.result(), leanAcc.result(), name)
	}
}

// The bodies the adapters send are the SDKs' encoding of the same parameters, plus the
// "stream":true their NewStreaming adds when the turn streams.
func TestBodiesEncodeAsTheSDKDoes(t *testing.T) {
	t.Parallel()
	temp, hot, tiny := 0.7, 1.6, 1e-9
	tools := []Tool{
		{Name: "lookup", Description: "Find a <thing> & more.", Parameters: json.RawMessage(`{"type":"object", "properties":{"q":{"type":"string","description":"what \"it\" is"}},"required":["q"],"additionalProperties":false}`)},
		{Name: "noargs", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: "empty"},
	}
	odd := "tab\there, newline\n, quote \" backslash \\ nul \x00 bell \x07 backspace \b form feed \f <b>&amp; é 😀 \u2028 \u2029 bad \xff\xfe end"
	reqs := map[string]Request{
		"minimal": {Model: "m", Messages: []Message{{Role: RoleUser, Text: "Say hello."}}},
		"system, temperature, max tokens, tools": {Model: "m", System: "You are " + odd, Temperature: &temp, MaxTokens: 77,
			Messages: []Message{{Role: RoleUser, Text: odd}}, Tools: tools},
		"clamped temperature": {Model: "m", Temperature: &hot, Messages: []Message{{Role: RoleUser, Text: "hi"}}},
		"tiny temperature":    {Model: "m", Temperature: &tiny, Messages: []Message{{Role: RoleUser, Text: "hi"}}},
		"a tool round trip": {Model: "m", Tools: tools[:1], Messages: []Message{
			{Role: RoleUser, Text: "look it up"},
			{Role: RoleAssistant, Text: "Looking.", ToolCalls: []ToolCall{
				{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"q": "a <b>", "n": [1, 2.5e3]}`)},
				{ID: "c2", Name: "noargs"},
			}},
			{Role: RoleTool, ToolResults: []ToolResult{
				{CallID: "c1", Content: `{"found":true}`},
				{CallID: "c2", Content: "failed: " + odd, IsError: true},
				{CallID: "c3", IsError: true},
				{CallID: "c4"},
			}},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c5", Name: "lookup", Arguments: json.RawMessage(`{}`)}}},
			{Role: RoleTool, ToolResults: []ToolResult{{CallID: "c5", Content: "ok"}}},
			{Role: RoleAssistant, Text: "Done."},
			{Role: RoleUser, Text: "thanks"},
		}},
		"history starting with the assistant": {Model: "m", Messages: []Message{
			{Role: RoleAssistant, Text: "Hello, I am the agent."},
			{Role: RoleAssistant, Text: "This call is recorded."},
			{Role: RoleAssistant},
			{Role: RoleUser, Text: "hi"},
		}},
	}
	for name, req := range reqs {
		for _, stream := range []bool{true, false} {
			name := fmt.Sprintf("%s (stream %v)", name, stream)
			got, ok := anthropicBody(req, stream)
			require.True(t, ok, name)
			p := anthropicParams(req)
			want, err := p.MarshalJSON()
			require.NoError(t, err, name)
			require.JSONEq(t, withStream(t, want, stream), string(got), "anthropic: "+name)
			require.True(t, json.Valid(got), name)

			got, ok = openaiBody(req, stream)
			require.True(t, ok, name)
			o := openaiParams(req, stream)
			want, err = o.MarshalJSON()
			require.NoError(t, err, name)
			require.JSONEq(t, withStream(t, want, stream), string(got), "openai: "+name)
		}
	}
}

// withStream adds the "stream":true of the SDKs' NewStreaming to a body that streams.
func withStream(t *testing.T, body []byte, stream bool) string {
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	if stream {
		m["stream"] = true
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}
