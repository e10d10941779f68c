package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"switchboard/llm"
)

// geminiWire speaks POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent?alt=sse.
type geminiWire struct{}

func (geminiWire) name() string     { return llm.ProtocolGemini }
func (geminiWire) basePath() string { return "" }

type geminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text         string `json:"text"`
		FunctionCall *struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
		FunctionResponse *struct {
			ID       string                     `json:"id"`
			Name     string                     `json:"name"`
			Response map[string]json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	} `json:"parts"`
}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	GenerationConfig  struct {
		Temperature     *float64 `json:"temperature"`
		MaxOutputTokens int      `json:"maxOutputTokens"`
	} `json:"generationConfig"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func (geminiWire) decode(r *http.Request) (received, int, error) {
	model, method, ok := geminiRoute(r.URL.Path)
	if r.Method != http.MethodPost || !ok {
		return received{}, http.StatusNotFound, fmt.Errorf("no route for %s %s", r.Method, r.URL.Path)
	}
	var req geminiRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return received{}, http.StatusBadRequest, err
	}
	if len(req.Contents) == 0 {
		return received{}, http.StatusBadRequest, errors.New("contents is required")
	}
	rec := Recorded{Path: r.URL.Path, Model: model, Stream: method == "streamGenerateContent", APIKey: r.Header.Get("X-Goog-Api-Key"),
		Temperature: req.GenerationConfig.Temperature, MaxTokens: req.GenerationConfig.MaxOutputTokens}
	if rec.APIKey == "" {
		rec.APIKey = r.URL.Query().Get("key")
	}
	if req.SystemInstruction != nil {
		rec.System = geminiMessage(*req.SystemInstruction).Text
	}
	for _, t := range req.Tools {
		for _, d := range t.FunctionDeclarations {
			rec.Tools = append(rec.Tools, d.Name)
		}
	}
	for _, c := range req.Contents {
		rec.Messages = append(rec.Messages, geminiMessage(c))
	}
	return received{Recorded: rec}, 0, nil
}

// geminiRoute splits "/v1beta/models/{model}:{method}".
func geminiRoute(path string) (model, method string, ok bool) {
	rest, found := strings.CutPrefix(path, "/v1beta/models/")
	if !found {
		return "", "", false
	}
	model, method, found = strings.Cut(rest, ":")
	ok = found && model != "" && (method == "generateContent" || method == "streamGenerateContent")
	return model, method, ok
}

// geminiMessage decodes one content: a user content of function responses is a tool message.
func geminiMessage(c geminiContent) llm.Message {
	msg := llm.Message{Role: llm.RoleUser}
	if c.Role == "model" {
		msg.Role = llm.RoleAssistant
	}
	for _, p := range c.Parts {
		switch {
		case p.FunctionCall != nil:
			fc := p.FunctionCall
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: fc.ID, Name: fc.Name, Arguments: compact(fc.Args)})
		case p.FunctionResponse != nil:
			fr := p.FunctionResponse
			msg.Role = llm.RoleTool
			msg.ToolResults = append(msg.ToolResults, geminiResult(fr.ID, fr.Name, fr.Response))
		default:
			msg.Text += p.Text
		}
	}
	return msg
}

// geminiResult reads a function response shaped {"output": ...} or {"error": ...}; a string
// value is the content itself, anything else its JSON.
func geminiResult(id, name string, response map[string]json.RawMessage) llm.ToolResult {
	res := llm.ToolResult{CallID: id, Name: name}
	value, ok := response["output"]
	if !ok {
		value, res.IsError = response["error"]
	}
	if value == nil {
		b, _ := json.Marshal(response)
		value = b
	}
	var s string
	if json.Unmarshal(value, &s) == nil {
		res.Content = s
	} else {
		res.Content = string(compact(value))
	}
	return res
}

func (geminiWire) errorBody(status int, message string) any {
	codes := map[int]string{
		400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
	}
	code, ok := codes[status]
	if !ok {
		code = "INTERNAL"
	}
	return map[string]any{"error": map[string]any{"code": status, "message": message, "status": code}}
}

func (w geminiWire) respond(rw http.ResponseWriter, in received, reply Reply) {
	if !in.Stream {
		body := w.response(in.Recorded, geminiParts(reply.Text, reply.ToolCalls), geminiUsage(reply, true))
		if reply.CutAfter > 0 {
			writeCut(rw, body)
			return
		}
		writeJSON(rw, http.StatusOK, body)
		return
	}
	s := newSSE(rw)
	for _, p := range reply.sent() {
		// Like the real API, every chunk reports the usage so far.
		s.event("", w.chunk(in.Recorded, geminiParts(p, nil), "", geminiUsage(reply, false)))
	}
	if reply.CutAfter > 0 {
		return // no chunk with a finishReason
	}
	s.event("", w.chunk(in.Recorded, geminiParts("", reply.ToolCalls), "STOP", geminiUsage(reply, true)))
}

func (geminiWire) response(rec Recorded, parts []any, usage map[string]any) map[string]any {
	return map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": usage,
		"modelVersion":  rec.Model,
		"responseId":    "fake-response",
	}
}

func (geminiWire) chunk(rec Recorded, parts []any, finish string, usage map[string]any) map[string]any {
	cand := map[string]any{"index": 0}
	if len(parts) > 0 {
		cand["content"] = map[string]any{"role": "model", "parts": parts}
	}
	if finish != "" {
		cand["finishReason"] = finish
	}
	return map[string]any{"candidates": []any{cand}, "usageMetadata": usage, "modelVersion": rec.Model, "responseId": "fake-response"}
}

// geminiParts builds model parts. The Gemini API sends function calls whole, without ids
// unless the Reply gave one.
func geminiParts(text string, calls []llm.ToolCall) []any {
	var parts []any
	if text != "" {
		parts = append(parts, map[string]any{"text": text})
	}
	for _, tc := range calls {
		fc := map[string]any{"name": tc.Name, "args": args(tc.Arguments)}
		if tc.ID != "" {
			fc["id"] = tc.ID
		}
		parts = append(parts, map[string]any{"functionCall": fc})
	}
	return parts
}

// geminiUsage is the usageMetadata of a chunk: the prompt count from the start, the
// candidates count once the reply is complete.
func geminiUsage(reply Reply, final bool) map[string]any {
	u := map[string]any{"promptTokenCount": reply.InputTokens, "totalTokenCount": reply.InputTokens}
	if final {
		u["candidatesTokenCount"] = reply.OutputTokens
		u["totalTokenCount"] = reply.InputTokens + reply.OutputTokens
	}
	return u
}
