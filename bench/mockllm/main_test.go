package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/llm"
)

// The mock must be read correctly by the real adapters (the vendors' SDKs), in both modes and
// for the three protocols, or the benchmarks would measure error paths.
func TestAdaptersReadTheMock(t *testing.T) {
	dir := t.TempDir()
	m := &mock{cfg: config{mode: "instant", pacedPrefix: "paced-", ttft: 300 * time.Millisecond, interval: 20 * time.Millisecond,
		chunks: 4, chunkText: "ab ", inputTokens: 11, outputTokens: 4, captureDir: dir}}
	srv := httptest.NewServer(m)
	defer srv.Close()
	for _, protocol := range []string{llm.ProtocolAnthropic, llm.ProtocolOpenAI, llm.ProtocolGemini} {
		for _, model := range []string{"fast-model", "paced-model"} {
			t.Run(protocol+"/"+model, func(t *testing.T) {
				base := srv.URL
				if protocol == llm.ProtocolOpenAI {
					base += "/v1"
				}
				client, err := llm.New(llm.Config{Protocol: protocol, BaseURL: base, APIKey: "k"})
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				var deltas []time.Duration
				res, err := client.Generate(context.Background(), llm.Request{Model: model, System: "be brief",
					Messages: []llm.Message{{Role: llm.RoleUser, Text: "hello"}}}, func(string) error {
					deltas = append(deltas, time.Since(start))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if res.Text != strings.Repeat("ab ", 4) || res.Finish != llm.FinishStop {
					t.Fatalf("text %q finish %q", res.Text, res.Finish)
				}
				if res.Usage != (llm.Usage{InputTokens: 11, OutputTokens: 4}) {
					t.Fatalf("usage %+v", res.Usage)
				}
				if len(deltas) != 4 {
					t.Fatalf("%d deltas, want 4", len(deltas))
				}
				// The pacing is a floor the mock enforces by sleeping, so this holds on any machine:
				// the first delta cannot arrive before the time to first token, nor the last before
				// that plus three intervals, counted from the request. Gaps between arrivals are
				// not floors (a late first delta shortens them), and no upper bound is checked.
				if strings.HasPrefix(model, "paced-") && (deltas[0] < 300*time.Millisecond || deltas[3] < 355*time.Millisecond) {
					t.Fatalf("paced deltas came too early: %v", deltas)
				}
			})
		}
	}
	for _, name := range []string{"anthropic-fast-model.json", "openai-paced-model.json", "gemini-fast-model.json"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Method, Path, Body string
			Header             map[string]string
		}
		if err := json.Unmarshal(raw, &rec); err != nil || rec.Method != "POST" || rec.Body == "" || len(rec.Header) == 0 {
			t.Fatalf("capture %s: %v %+v", name, err, rec)
		}
	}
}

func TestNonStreamingJSON(t *testing.T) {
	m := &mock{cfg: config{mode: "instant", chunks: 2, chunkText: "x", inputTokens: 1, outputTokens: 2}}
	srv := httptest.NewServer(m)
	defer srv.Close()
	for path, want := range map[string]string{
		"/v1/messages":                           `"stop_reason":"end_turn"`,
		"/v1/chat/completions":                   `"finish_reason":"stop"`,
		"/v1beta/models/g-model:generateContent": `"finishReason":"STOP"`,
	} {
		resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) || !strings.Contains(string(b), `"xx"`) {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
}

func TestModelOptions(t *testing.T) {
	m := &mock{cfg: config{mode: "instant", pacedPrefix: "paced-", ttft: time.Second, interval: time.Second, chunks: 5, chunkText: "x"}}
	c, paced, err := m.modelConfig("paced-x@ttft=5ms,interval=2ms,chunks=3")
	if err != nil || !paced || c.ttft != 5*time.Millisecond || c.interval != 2*time.Millisecond || c.chunks != 3 {
		t.Fatalf("%+v %v %v", c, paced, err)
	}
	if _, paced, _ := m.modelConfig("alpha-sonnet-4-6"); paced {
		t.Fatal("an ordinary model is paced")
	}
	if _, _, err := m.modelConfig("paced-x@speed=3"); err == nil {
		t.Fatal("unknown option accepted")
	}
	a := m.answer("anthropic", "paced-x@chunks=2", false)
	if a.err != nil || len(a.chunks) != 2 || !a.paced || !strings.Contains(string(a.json), `"output_tokens":2`) {
		t.Fatalf("answer %+v", a)
	}
}

func TestParseRequestReadsTopLevelFieldsAndRefusesBadBodies(t *testing.T) {
	for body, want := range map[string]request{
		`{"model":"m","stream":true,"stream_options":{"include_usage":true}}`:       {Model: "m", Stream: true, IncludeUsage: true},
		`{"messages":[{"role":"user","model":"inner"}],"model":"m","stream":false}`: {Model: "m"},
		`{"tools":[{"model":"inner","stream":true}]}`:                               {},
		`{"model":"m","stream":null}`:                                               {Model: "m"},
	} {
		got, err := parseRequest([]byte(body))
		if err != nil || got != want {
			t.Errorf("%s: got %+v, %v; want %+v", body, got, err, want)
		}
	}
	for _, body := range []string{`{"model":"m"`, `{"model":"m",}`, `[{"model":"m"}]`, `"m"`, ``,
		`{"model":3}`, `{"model":"m","stream":"yes"}`, `{"model":"m","stream_options":{"include_usage":1}}`} {
		if got, err := parseRequest([]byte(body)); err == nil {
			t.Errorf("%s: accepted as %+v", body, got)
		}
	}
}

func TestMalformedBodyIsRefused(t *testing.T) {
	srv := httptest.NewServer(&mock{cfg: config{mode: "instant", chunks: 1, chunkText: "x"}})
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m",`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "not JSON") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// largeRequest is shaped like the builder assistant's: a long system prompt full of escapes,
// and tool schemas, about 17 KB.
func largeRequest() []byte {
	prompt := strings.Repeat("You build agents.\n- Say \"what\" you do, then do it.\n", 160)
	var tools []any
	for i := range 12 {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name": "tool_" + strings.Repeat("x", i), "description": strings.Repeat("Does a thing. ", 20),
			"parameters": map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string", "description": "the name"},
				"n":    map[string]any{"type": "integer", "minimum": 0}}, "required": []string{"name"}}}})
	}
	b, _ := json.Marshal(map[string]any{"model": "beta-5.4", "messages": []any{
		map[string]any{"role": "system", "content": prompt}, map[string]any{"role": "user", "content": "hi"}}, "tools": tools})
	return b
}

// BenchmarkParseRequest against json.Unmarshal, the mock's way before: run both with -bench.
func BenchmarkParseRequest(b *testing.B) {
	body := largeRequest()
	b.Run("gjson", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if r, err := parseRequest(body); err != nil || r.Model == "" {
				b.Fatal(r, err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var r struct {
				Model         string `json:"model"`
				Stream        bool   `json:"stream"`
				StreamOptions struct {
					IncludeUsage bool `json:"include_usage"`
				} `json:"stream_options"`
			}
			if err := json.Unmarshal(body, &r); err != nil || r.Model == "" {
				b.Fatal(r, err)
			}
		}
	})
}

// An echo=1 model answers each request with its last user message, through the real
// adapters of the three protocols, streamed or not.
func TestEchoAnswersTheLastUserMessage(t *testing.T) {
	srv := httptest.NewServer(&mock{cfg: config{mode: "instant", pacedPrefix: "paced-", chunks: 5, chunkText: "x", inputTokens: 1}})
	defer srv.Close()
	for _, protocol := range []string{llm.ProtocolAnthropic, llm.ProtocolOpenAI, llm.ProtocolGemini} {
		base := srv.URL
		if protocol == llm.ProtocolOpenAI {
			base += "/v1"
		}
		client, err := llm.New(llm.Config{Protocol: protocol, BaseURL: base, APIKey: "k"})
		if err != nil {
			t.Fatal(err)
		}
		for i, onDelta := range []func(string) error{nil, func(string) error { return nil }} {
			req := llm.Request{Model: "paced-echo@ttft=1ms,chunks=1,echo=1", System: "be brief", Messages: []llm.Message{
				{Role: llm.RoleUser, Text: "question 1"}, {Role: llm.RoleAssistant, Text: "re: question 1"},
				{Role: llm.RoleUser, Text: "question 2"}}}
			res, err := client.Generate(context.Background(), req, onDelta)
			if err != nil {
				t.Fatal(protocol, i, err)
			}
			if res.Text != "re: question 2" {
				t.Fatalf("%s (streamed: %v): %q", protocol, i == 1, res.Text)
			}
		}
	}
	if _, _, err := (&mock{}).modelConfig("m@echo=yes"); err == nil {
		t.Fatal("echo=yes accepted")
	}
}

// A search=1 model calls search_knowledge_base with the last user message as the query when
// the request offers the tool and holds no tool result, and answers text otherwise: read by
// the real adapters of the three protocols, as a deployed agent's turn reads it.
func TestSearchModelCallsTheKnowledgeTool(t *testing.T) {
	m := &mock{cfg: config{mode: "instant", pacedPrefix: "paced-", ttft: time.Millisecond, interval: time.Millisecond,
		chunks: 2, chunkText: "ab ", inputTokens: 11}}
	srv := httptest.NewServer(m)
	defer srv.Close()
	search := llm.Tool{Name: "search_knowledge_base", Description: "Search.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)}
	for _, protocol := range []string{llm.ProtocolAnthropic, llm.ProtocolOpenAI, llm.ProtocolGemini} {
		t.Run(protocol, func(t *testing.T) {
			base := srv.URL
			if protocol == llm.ProtocolOpenAI {
				base += "/v1"
			}
			client, err := llm.New(llm.Config{Protocol: protocol, BaseURL: base, APIKey: "k"})
			if err != nil {
				t.Fatal(err)
			}
			model := "paced-agent@ttft=1ms,chunks=2,search=1"
			ask := []llm.Message{{Role: llm.RoleUser, Text: "Hi"}, {Role: llm.RoleAssistant, Text: "Hello!"},
				{Role: llm.RoleUser, Text: "sunday opening hours"}}
			res, err := client.Generate(context.Background(), llm.Request{Model: model, Messages: ask, Tools: []llm.Tool{search}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "search_knowledge_base" || res.Text != "" {
				t.Fatalf("want one call of search_knowledge_base, got %+v", res)
			}
			var args struct{ Query string }
			if err := json.Unmarshal(res.ToolCalls[0].Arguments, &args); err != nil || args.Query != "sunday opening hours" {
				t.Fatalf("arguments %s (%v), want the query %q", res.ToolCalls[0].Arguments, err, "sunday opening hours")
			}
			if protocol != llm.ProtocolGemini && res.Finish != llm.FinishToolCalls {
				t.Fatalf("finish %q, want tool_calls", res.Finish)
			}
			// With the tool's result in the request, the model answers.
			call := res.ToolCalls[0]
			after := append(ask, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}},
				llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: call.ID, Name: call.Name, Content: `{"results":[]}`}}})
			res, err = client.Generate(context.Background(), llm.Request{Model: model, Messages: after, Tools: []llm.Tool{search}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != "ab ab " || len(res.ToolCalls) != 0 || res.Finish != llm.FinishStop {
				t.Fatalf("after the tool result: %+v, want the text", res)
			}
			// The next turn of the conversation: the earlier result is history, the model
			// searches again for the new message.
			next := append(after, llm.Message{Role: llm.RoleAssistant, Text: "ab ab "}, llm.Message{Role: llm.RoleUser, Text: "monday closing time"})
			res, err = client.Generate(context.Background(), llm.Request{Model: model, Messages: next, Tools: []llm.Tool{search}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.ToolCalls) != 1 || !strings.Contains(string(res.ToolCalls[0].Arguments), "monday closing time") {
				t.Fatalf("the next turn: %+v, want a search for its message", res)
			}
			// Without the tool on offer (a stored response), text as well.
			res, err = client.Generate(context.Background(), llm.Request{Model: model, Messages: ask}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != "ab ab " || len(res.ToolCalls) != 0 {
				t.Fatalf("without the tool: %+v, want the text", res)
			}
		})
	}
	// One answer per protocol came after a search's result (the other text answers did not).
	if n := m.fromSearch.Load(); n != 3 {
		t.Fatalf("from_search %d, want 3", n)
	}
}
