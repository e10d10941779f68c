package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"switchboard/llm"
)

func TestZZDump(t *testing.T) {
	for _, p := range protocols {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			fmt.Printf("== %s %s?%s\n%s\n", p, r.URL.Path, r.URL.RawQuery, b)
			w.WriteHeader(500)
		}))
		base := srv.URL
		if p == "openai" { base += "/v1" }
		c, _ := llm.New(llm.Config{Protocol: p, BaseURL: base, APIKey: "k"})
		req := conversation()
		req.Tools = []llm.Tool{{Name: "get_weather", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)}}
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_9", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}},
			llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "call_9", Name: "get_weather", Content: `{"t":1}`, IsError: false}}},
		)
		_, err := c.Generate(context.Background(), req, nil)
		fmt.Println(err)
		srv.Close()
	}
}
