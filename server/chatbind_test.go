package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/gen/v1api"
)

// TestChatRequestFromTheValidatedValueMatchesTheGeneratedDecoding: the chat completion body
// bound from the validator's decoded value equals what the generated UnmarshalJSON makes of
// the same JSON (members matched exactly, unknown ones kept, nulls, content parts).
func TestChatRequestFromTheValidatedValueMatchesTheGeneratedDecoding(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{"model":"beta-5.4","messages":[{"role":"user","content":"Say hello."}]}`,
		`{"messages":[{"role":"system","content":"Be terse. \u00e9\n\"q\""},{"role":"user","content":null,"name":"x"}],"stream":null}`,
		`{"model":"alpha-sonnet-4-6","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"b","n":1.5}]}],
		  "stream":true,"stream_options":{"include_usage":true,"x":[1,2]},"temperature":0.2,"max_tokens":12,"tools":[{"type":"function"}],
		  "Model":"case differs","conversation":"mc-abc"}`,
		`{"messages":[{"role":"assistant","content":"","tool_calls":[]}],"stream":false,"stream_options":{"include_usage":null},"user":null}`,
		`{"messages":[{"role":"tool","content":[],"tool_call_id":"c1"}],"metadata":{"a":{"b":[true,null,"s",3]}}}`,
	}
	for _, raw := range bodies {
		var want v1api.CreateChatCompletionRequest
		require.NoError(t, json.Unmarshal([]byte(raw), &want), raw)
		var value any // as kin-openapi decodes a JSON body
		require.NoError(t, json.Unmarshal([]byte(raw), &value), raw)
		got, ok := chatRequestOf(value)
		require.True(t, ok, raw)
		require.Len(t, got.Messages, len(want.Messages), raw)
		for i := range want.Messages {
			// The same JSON value (re-encoded: escapes may differ), read the same way.
			w, g := want.Messages[i].Content, got.Messages[i].Content
			require.Equal(t, w == nil, g == nil, raw)
			if w != nil {
				wj, _ := w.MarshalJSON()
				gj, _ := g.MarshalJSON()
				require.JSONEq(t, string(wj), string(gj), raw)
			}
			require.Equal(t, contentText(w), contentText(g), raw)
			want.Messages[i].Content, got.Messages[i].Content = nil, nil
		}
		require.Equal(t, want, *got, raw)
	}
	for _, odd := range []any{"x", []any{}, map[string]any{"messages": "x"}, map[string]any{"messages": []any{"x"}},
		map[string]any{"messages": []any{map[string]any{"role": 1}}}, map[string]any{"stream": "yes"},
		map[string]any{"model": 3.0}, map[string]any{"stream_options": true}, map[string]any{"conversation": false}} {
		_, ok := chatRequestOf(odd)
		require.False(t, ok, "%v falls back to the generated binding", odd)
	}
	require.Equal(t, map[string]any{"n": 1.5, "l": []any{2.0}}, plainJSON(map[string]any{"n": json.Number("1.5"), "l": []any{json.Number("2")}}))
}

// TestResponseRequestFromTheValidatedValueMatchesTheGeneratedDecoding: the same for the
// response body (input as a string or items, nulls, unknown members kept).
func TestResponseRequestFromTheValidatedValueMatchesTheGeneratedDecoding(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{"model":"beta-5.4","input":"Say hello."}`,
		`{"input":[{"role":"user","content":"a \u00e9 <b>"},{"type":"message","role":"developer","content":[{"type":"input_text","text":"t"}]}],
		  "instructions":"Be terse.","previous_response_id":"resp_x","background":true,"store":false,"stream":null,"temperature":0.5,"Model":"case differs"}`,
		`{"input":"x","model":null,"instructions":null,"metadata":{"a":[1,true,null]},"tools":[]}`,
	}
	for _, raw := range bodies {
		var want v1api.CreateResponseRequest
		require.NoError(t, json.Unmarshal([]byte(raw), &want), raw)
		var value any
		require.NoError(t, json.Unmarshal([]byte(raw), &value), raw)
		got, ok := responseRequestOf(value)
		require.True(t, ok, raw)
		wj, _ := want.Input.MarshalJSON()
		gj, _ := got.Input.MarshalJSON()
		require.JSONEq(t, string(wj), string(gj), raw)
		want.Input, got.Input = v1api.ResponseInput{}, v1api.ResponseInput{}
		require.Equal(t, want, *got, raw)
	}
	for _, odd := range []any{"x", []any{}, map[string]any{"model": 3.0}, map[string]any{"store": "yes"},
		map[string]any{"background": "no"}, map[string]any{"instructions": []any{}}, map[string]any{"previous_response_id": true}} {
		_, ok := responseRequestOf(odd)
		require.False(t, ok, "%v falls back to the generated binding", odd)
	}
}
