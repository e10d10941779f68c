package llm

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The kept form of a tool encodes exactly as the SDK encodes the tool itself.
func TestCachedToolsEncodeAsTheSDKDoes(t *testing.T) {
	tools := []Tool{
		{Name: "lookup", Description: "Find a thing.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"what"}},"required":["q"],"additionalProperties":false}`)},
		{Name: "noargs", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Name: "empty"},
	}
	for _, tool := range tools {
		for range 2 { // the first get encodes, the second reads the cache
			want, err := anthropicTool(tool).MarshalJSON()
			require.NoError(t, err)
			got, err := anthropicTools.get(tool).MarshalJSON()
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got), tool.Name)

			want, err = openaiTool(tool).MarshalJSON()
			require.NoError(t, err)
			got, err = openaiTools.get(tool).MarshalJSON()
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got), tool.Name)
		}
	}
	// And inside a whole request.
	req := Request{Model: "m", Messages: []Message{{Role: RoleUser, Text: "hi"}}, Tools: tools}
	p := anthropicParams(req)
	got, err := p.MarshalJSON()
	require.NoError(t, err)
	for i, tool := range tools {
		p.Tools[i] = anthropicTool(tool)
	}
	want, err := p.MarshalJSON()
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}

// The cache tells tools apart by name, description and schema, and remembers only valid
// schemas.
func TestToolCacheKeysAndValidSchemas(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	a := Tool{Name: "a", Parameters: schema}
	b := Tool{Name: "b", Parameters: schema}
	c := Tool{Name: "a", Description: "other", Parameters: schema}
	for range 2 {
		for _, tool := range []Tool{a, b, c} {
			got := openaiToolJSON.get(tool)
			want, err := openaiTool(tool).MarshalJSON()
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got), tool.Name+tool.Description)
		}
	}
	require.True(t, validSchema(schema))
	require.True(t, validSchema(schema))
	require.False(t, validSchema(json.RawMessage(`{"type":`)))
	require.False(t, validSchema(json.RawMessage(`{"type":`))) // not remembered as valid
}
