package llm

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"
)

func TestAnthropicFinish(t *testing.T) {
	t.Parallel()
	cases := map[anthropic.StopReason]FinishReason{
		"end_turn":                      FinishStop,
		"stop_sequence":                 FinishStop,
		"pause_turn":                    FinishStop,
		"max_tokens":                    FinishLength,
		"model_context_window_exceeded": FinishLength,
		"tool_use":                      FinishToolCalls,
		"refusal":                       FinishContentFilter,
	}
	for in, want := range cases {
		require.Equal(t, want, anthropicFinish(in), in)
	}
}

func TestOpenAIFinish(t *testing.T) {
	t.Parallel()
	cases := map[string]FinishReason{
		"stop": FinishStop, "length": FinishLength, "tool_calls": FinishToolCalls,
		"function_call": FinishToolCalls, "content_filter": FinishContentFilter,
	}
	for in, want := range cases {
		require.Equal(t, want, openaiFinish(in), in)
	}
}

func TestGeminiFinish(t *testing.T) {
	t.Parallel()
	cases := map[genai.FinishReason]FinishReason{
		genai.FinishReasonStop:                  FinishStop,
		genai.FinishReasonMaxTokens:             FinishLength,
		genai.FinishReasonSafety:                FinishContentFilter,
		genai.FinishReasonRecitation:            FinishContentFilter,
		genai.FinishReasonProhibitedContent:     FinishContentFilter,
		genai.FinishReasonBlocklist:             FinishContentFilter,
		genai.FinishReasonMalformedFunctionCall: FinishStop,
	}
	for in, want := range cases {
		require.Equal(t, want, geminiFinish(in), in)
	}
}

func TestSettle(t *testing.T) {
	t.Parallel()
	t.Run("tool calls turn a stop into tool_calls", func(t *testing.T) {
		res := Result{Finish: FinishStop, ToolCalls: []ToolCall{{ID: "1", Name: "f"}}}
		require.Nil(t, settle(&res))
		require.Equal(t, FinishToolCalls, res.Finish)
		require.JSONEq(t, `{}`, string(res.ToolCalls[0].Arguments))
	})
	t.Run("a call cut by the token limit is dropped", func(t *testing.T) {
		res := Result{Finish: FinishLength, ToolCalls: []ToolCall{{ID: "1", Name: "f", Arguments: json.RawMessage(`{"a":`)}}}
		require.Nil(t, settle(&res))
		require.Equal(t, FinishLength, res.Finish)
		require.Nil(t, res.ToolCalls)
	})
	t.Run("broken arguments are malformed", func(t *testing.T) {
		res := Result{Finish: FinishToolCalls, ToolCalls: []ToolCall{{ID: "1", Name: "f", Arguments: json.RawMessage(`{"a":`)}}}
		e := settle(&res)
		require.NotNil(t, e)
		require.Equal(t, ErrMalformed, e.Kind)
	})
}

func TestAnthropicToolSchemaPassesThrough(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`
	b, err := json.Marshal(anthropicTool(Tool{Name: "w", Parameters: json.RawMessage(schema)}))
	require.NoError(t, err)
	var got struct {
		InputSchema json.RawMessage `json:"input_schema"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	require.JSONEq(t, schema, string(got.InputSchema))
}

func TestGeminiToolResultShape(t *testing.T) {
	t.Parallel()
	require.Equal(t, map[string]any{"output": map[string]any{"t": float64(1)}}, geminiResponse(ToolResult{Content: `{"t":1}`}))
	require.Equal(t, map[string]any{"output": "plain text"}, geminiResponse(ToolResult{Content: "plain text"}))
	require.Equal(t, map[string]any{"error": "boom"}, geminiResponse(ToolResult{Content: "boom", IsError: true}))
}
