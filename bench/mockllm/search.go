package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// searchTool is the agent tool a search=1 model calls (converse/tools.go).
const searchTool = "search_knowledge_base"

// offersSearch reports whether a request offers the tool search_knowledge_base, in any of
// the three protocols' tool lists.
func offersSearch(body []byte) bool {
	tools := gjson.GetBytes(body, "tools")
	return tools.Exists() && strings.Contains(tools.Raw, `"`+searchTool+`"`)
}

// hasToolResult reports whether a request holds the result of a tool call after its last
// user message (an earlier turn's results, in the history, do not count): an openai "tool"
// message, an anthropic "tool_result" block or a gemini functionResponse part. Anthropic and
// gemini carry the results in user-role messages; a user message without one starts over.
func hasToolResult(protocol string, body []byte) bool {
	found := false
	list, parts := "messages", "content"
	if protocol == "gemini" {
		list, parts = "contents", "parts"
	}
	gjson.GetBytes(body, list).ForEach(func(_, msg gjson.Result) bool {
		role := msg.Get("role").Str
		if protocol == "openai" {
			switch role {
			case "tool":
				found = true
			case "user":
				found = false
			}
			return true
		}
		if role == "model" || role == "assistant" {
			return true
		}
		result := false
		msg.Get(parts).ForEach(func(_, part gjson.Result) bool {
			result = part.Get("type").Str == "tool_result" || part.Get("functionResponse").Exists()
			return !result
		})
		found = result
		return true
	})
	return found
}

// searchCall renders, for one request, a search=1 model's call of search_knowledge_base with
// the request's last user message as the query: the whole call in one chunk, paced like the
// model's text.
func (m *mock) searchCall(protocol, model string, includeUsage bool, body []byte) *answer {
	c, paced, _ := m.modelConfig(model) // checked when the template was rendered
	args, _ := json.Marshal(map[string]string{"query": lastUserText(protocol, body)})
	const id = "call_mock_search"
	in, out := c.inputTokens, 5
	a := &answer{paced: paced, ttft: c.ttft, interval: c.interval}
	var head, one, tail bytes.Buffer
	frame := func(b *bytes.Buffer, event string, data any) {
		if event != "" {
			fmt.Fprintf(b, "event: %s\n", event)
		}
		raw, _ := json.Marshal(data)
		fmt.Fprintf(b, "data: %s\n\n", raw)
	}
	switch protocol {
	case "anthropic":
		msg := func(content []any, stop any, outTokens int) map[string]any {
			return map[string]any{"id": "msg_mock", "type": "message", "role": "assistant", "model": model,
				"content": content, "stop_reason": stop, "stop_sequence": nil,
				"usage": map[string]any{"input_tokens": in, "output_tokens": outTokens}}
		}
		a.json, _ = json.Marshal(msg([]any{map[string]any{"type": "tool_use", "id": id, "name": searchTool,
			"input": json.RawMessage(args)}}, "tool_use", out))
		frame(&head, "message_start", map[string]any{"type": "message_start", "message": msg([]any{}, nil, 1)})
		frame(&head, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": id, "name": searchTool, "input": map[string]any{}}})
		frame(&one, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(args)}})
		frame(&tail, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		frame(&tail, "message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}})
		frame(&tail, "message_stop", map[string]any{"type": "message_stop"})
	case "openai":
		usage := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
		envelope := func(object string) map[string]any {
			return map[string]any{"id": "chatcmpl-mock", "object": object, "created": 1700000000, "model": model}
		}
		call := func(withIndex bool) map[string]any {
			tc := map[string]any{"id": id, "type": "function", "function": map[string]any{"name": searchTool, "arguments": string(args)}}
			if withIndex {
				tc["index"] = 0
			}
			return tc
		}
		whole := envelope("chat.completion")
		whole["choices"] = []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call(false)}}}}
		whole["usage"] = usage
		a.json, _ = json.Marshal(whole)
		delta := func(d map[string]any, finish any) map[string]any {
			e := envelope("chat.completion.chunk")
			e["choices"] = []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish, "logprobs": nil}}
			if includeUsage {
				e["usage"] = nil
			}
			return e
		}
		frame(&head, "", delta(map[string]any{"role": "assistant", "content": nil}, nil))
		frame(&one, "", delta(map[string]any{"tool_calls": []any{call(true)}}, nil))
		frame(&tail, "", delta(map[string]any{}, "tool_calls"))
		if includeUsage {
			last := envelope("chat.completion.chunk")
			last["choices"], last["usage"] = []any{}, usage
			frame(&tail, "", last)
		}
		tail.WriteString("data: [DONE]\n\n")
	case "gemini":
		resp := map[string]any{"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{
				"name": searchTool, "args": json.RawMessage(args)}}}}}},
			"usageMetadata": map[string]any{"promptTokenCount": in, "candidatesTokenCount": out, "totalTokenCount": in + out},
			"modelVersion":  model, "responseId": "mock-response"}
		a.json, _ = json.Marshal(resp)
		frame(&one, "", resp)
	}
	a.head, a.chunks, a.tail = head.Bytes(), [][]byte{one.Bytes()}, tail.Bytes()
	a.all = append(append(append([]byte(nil), a.head...), one.Bytes()...), a.tail...)
	return a
}
