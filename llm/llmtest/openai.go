package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"switchboard/llm"
)

// openaiWire speaks POST {base}/chat/completions, the base being "/v1" like the real API's.
type openaiWire struct{}

func (openaiWire) name() string     { return llm.ProtocolOpenAI }
func (openaiWire) basePath() string { return "/v1" }

type openaiRequest struct {
	Model               string   `json:"model"`
	Temperature         *float64 `json:"temperature"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
	Messages            []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (openaiWire) decode(r *http.Request) (received, int, error) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		return received{}, http.StatusNotFound, fmt.Errorf("no route for %s %s", r.Method, r.URL.Path)
	}
	var req openaiRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return received{}, http.StatusBadRequest, err
	}
	if req.Model == "" || len(req.Messages) == 0 {
		return received{}, http.StatusBadRequest, errors.New("model and messages are required")
	}
	rec := Recorded{Path: r.URL.Path, Model: req.Model, Stream: req.Stream, Temperature: req.Temperature, MaxTokens: req.MaxCompletionTokens,
		APIKey: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, t.Function.Name)
	}
	names := toolNames{}
	var system []string
	for _, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
			system = append(system, textOf(m.Content))
		case "tool":
			// Consecutive tool messages answer the same assistant turn: one llm tool message.
			result := llm.ToolResult{CallID: m.ToolCallID, Name: names[m.ToolCallID], Content: textOf(m.Content)}
			if n := len(rec.Messages); n > 0 && rec.Messages[n-1].Role == llm.RoleTool {
				rec.Messages[n-1].ToolResults = append(rec.Messages[n-1].ToolResults, result)
			} else {
				rec.Messages = append(rec.Messages, llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{result}})
			}
		default:
			msg := llm.Message{Role: llm.Role(m.Role), Text: textOf(m.Content)}
			for _, tc := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: compact(json.RawMessage(tc.Function.Arguments))})
			}
			names.add(msg.ToolCalls)
			rec.Messages = append(rec.Messages, msg)
		}
	}
	rec.System = strings.Join(system, "\n\n")
	return received{Recorded: rec, includeUsage: req.StreamOptions.IncludeUsage}, 0, nil
}

func (openaiWire) errorBody(status int, message string) any {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case status >= 500:
		typ = "server_error"
	}
	return map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": code}}
}

func (w openaiWire) respond(rw http.ResponseWriter, in received, reply Reply) {
	if !in.Stream {
		body := w.completion(in.Recorded, reply)
		if reply.CutAfter > 0 {
			writeCut(rw, body)
			return
		}
		writeJSON(rw, http.StatusOK, body)
		return
	}
	w.stream(newSSE(rw), in, reply)
}

func (openaiWire) completion(rec Recorded, reply Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil}
	if reply.Text != "" {
		msg["content"] = reply.Text
	}
	if len(reply.ToolCalls) > 0 {
		var calls []any
		for i, tc := range reply.ToolCalls {
			calls = append(calls, map[string]any{"id": openaiCallID(tc, i), "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": string(args(tc.Arguments))}})
		}
		msg["tool_calls"] = calls
	}
	body := openaiEnvelope(rec, "chat.completion")
	body["choices"] = []any{map[string]any{"index": 0, "message": msg, "finish_reason": openaiFinish(reply), "logprobs": nil}}
	body["usage"] = openaiUsage(reply)
	return body
}

func (openaiWire) stream(s *sse, in received, reply Reply) {
	rec := in.Recorded
	chunk := func(delta map[string]any, finish any) {
		body := openaiEnvelope(rec, "chat.completion.chunk")
		body["choices"] = []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}
		if in.includeUsage {
			body["usage"] = nil // with include_usage, every chunk but the last says so
		}
		s.event("", body)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, p := range reply.sent() {
		chunk(map[string]any{"content": p}, nil)
	}
	if reply.CutAfter > 0 {
		return // no finish_reason, no usage, no [DONE]
	}
	for i, tc := range reply.ToolCalls {
		head := map[string]any{"index": i, "id": openaiCallID(tc, i), "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}
		chunk(map[string]any{"tool_calls": []any{head}}, nil)
		for _, part := range halves(args(tc.Arguments)) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": part}}}}, nil)
		}
	}
	chunk(map[string]any{}, openaiFinish(reply))
	if in.includeUsage {
		usage := openaiEnvelope(rec, "chat.completion.chunk")
		usage["choices"] = []any{}
		usage["usage"] = openaiUsage(reply)
		s.event("", usage)
	}
	s.raw("", "[DONE]")
}

func openaiEnvelope(rec Recorded, object string) map[string]any {
	return map[string]any{"id": "chatcmpl-fake", "object": object, "created": 1700000000, "model": rec.Model}
}

func openaiUsage(reply Reply) map[string]any {
	return map[string]any{"prompt_tokens": reply.InputTokens, "completion_tokens": reply.OutputTokens, "total_tokens": reply.InputTokens + reply.OutputTokens}
}

func openaiFinish(reply Reply) string {
	if len(reply.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func openaiCallID(tc llm.ToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("call_fake_%d", i+1)
}
