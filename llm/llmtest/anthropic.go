package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"switchboard/llm"
)

// anthropicWire speaks POST /v1/messages.
type anthropicWire struct{}

func (anthropicWire) name() string     { return llm.ProtocolAnthropic }
func (anthropicWire) basePath() string { return "" }

type anthropicRequest struct {
	Model       string          `json:"model"`
	MaxTokens   int             `json:"max_tokens"`
	Temperature *float64        `json:"temperature"`
	System      json.RawMessage `json:"system"`
	Messages    []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (anthropicWire) decode(r *http.Request) (received, int, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return received{}, http.StatusNotFound, fmt.Errorf("no route for %s %s", r.Method, r.URL.Path)
	}
	var req anthropicRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return received{}, http.StatusBadRequest, err
	}
	if req.Model == "" || req.MaxTokens <= 0 || len(req.Messages) == 0 {
		return received{}, http.StatusBadRequest, errors.New("model, max_tokens and messages are required")
	}
	rec := Recorded{Path: r.URL.Path, Model: req.Model, System: textOf(req.System), Stream: req.Stream, APIKey: r.Header.Get("X-Api-Key"),
		Temperature: req.Temperature, MaxTokens: req.MaxTokens}
	if rec.APIKey == "" {
		rec.APIKey = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	for _, t := range req.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	names := toolNames{}
	for _, m := range req.Messages {
		msgs, err := anthropicMessage(m.Role, m.Content, names)
		if err != nil {
			return received{}, http.StatusBadRequest, err
		}
		rec.Messages = append(rec.Messages, msgs...)
	}
	return received{Recorded: rec}, 0, nil
}

// anthropicMessage turns one wire message into llm messages: a user turn holding tool_result
// blocks becomes a tool message (followed by a user message if it also has text).
func anthropicMessage(role string, content json.RawMessage, names toolNames) ([]llm.Message, error) {
	var blocks []anthropicBlock
	var s string
	if json.Unmarshal(content, &s) == nil {
		blocks = []anthropicBlock{{Type: "text", Text: s}}
	} else if err := json.Unmarshal(content, &blocks); err != nil {
		return nil, fmt.Errorf("message content: %w", err)
	}
	msg := llm.Message{Role: llm.Role(role)}
	var results []llm.ToolResult
	for _, b := range blocks {
		switch b.Type {
		case "text":
			msg.Text += b.Text
		case "tool_use":
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: compact(b.Input)})
		case "tool_result":
			results = append(results, llm.ToolResult{CallID: b.ToolUseID, Name: names[b.ToolUseID], Content: textOf(b.Content), IsError: b.IsError})
		}
	}
	names.add(msg.ToolCalls)
	var out []llm.Message
	if len(results) > 0 {
		out = append(out, llm.Message{Role: llm.RoleTool, ToolResults: results})
	}
	if len(results) == 0 || msg.Text != "" || len(msg.ToolCalls) > 0 {
		out = append(out, msg)
	}
	return out, nil
}

func (anthropicWire) errorBody(status int, message string) any {
	types := map[int]string{
		400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error",
	}
	typ, ok := types[status]
	if !ok {
		typ = "api_error"
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}}
}

func (w anthropicWire) respond(rw http.ResponseWriter, in received, reply Reply) {
	rec := in.Recorded
	if !rec.Stream {
		body := w.message(rec, reply)
		if reply.CutAfter > 0 {
			writeCut(rw, body)
			return
		}
		writeJSON(rw, http.StatusOK, body)
		return
	}
	w.stream(newSSE(rw), rec, reply)
}

// message is the non-streaming answer.
func (anthropicWire) message(rec Recorded, reply Reply) map[string]any {
	content := []any{}
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	for i, tc := range reply.ToolCalls {
		content = append(content, map[string]any{"type": "tool_use", "id": anthropicCallID(tc, i), "name": tc.Name, "input": args(tc.Arguments)})
	}
	msg := anthropicMessageStart(rec)
	msg["content"] = content
	msg["stop_reason"] = anthropicStopReason(reply)
	msg["usage"] = map[string]any{"input_tokens": reply.InputTokens, "output_tokens": reply.OutputTokens}
	return msg
}

func (anthropicWire) stream(s *sse, rec Recorded, reply Reply) {
	start := anthropicMessageStart(rec)
	start["content"] = []any{}
	// Like the real API: input tokens up front, output counted in message_delta.
	start["usage"] = map[string]any{"input_tokens": reply.InputTokens, "output_tokens": min(reply.OutputTokens, 1)}
	s.event("message_start", map[string]any{"type": "message_start", "message": start})
	s.event("ping", map[string]any{"type": "ping"})

	index := 0
	if pieces := reply.sent(); len(pieces) > 0 {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range pieces {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		if reply.CutAfter > 0 {
			return // the connection "breaks": no block stop, no message_delta, no message_stop
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if reply.CutAfter > 0 {
		return
	}
	for i, tc := range reply.ToolCalls {
		block := map[string]any{"type": "tool_use", "id": anthropicCallID(tc, i), "name": tc.Name, "input": map[string]any{}}
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": block})
		for _, part := range halves(args(tc.Arguments)) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	s.event("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStopReason(reply), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": reply.OutputTokens},
	})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

func anthropicMessageStart(rec Recorded) map[string]any {
	return map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": rec.Model,
		"stop_reason": nil, "stop_sequence": nil,
	}
}

func anthropicStopReason(reply Reply) string {
	if len(reply.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func anthropicCallID(tc llm.ToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("toolu_fake_%d", i+1)
}
