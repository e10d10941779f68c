// Package llmtest provides fake model vendors for tests: HTTP servers that speak the real
// wire protocols (Anthropic Messages, OpenAI Chat Completions, Gemini generateContent), so
// the real adapters in package llm, SDKs included, can be exercised end to end.
//
// Give the adapter Fake.URL as its base URL:
//
//	anthropic: URL is the server root; the SDK posts to URL + "/v1/messages".
//	openai:    URL is the server root + "/v1"; the SDK posts to URL + "/chat/completions".
//	gemini:    URL is the server root; the SDK posts to
//	           URL + "/v1beta/models/{model}:generateContent" or ":streamGenerateContent?alt=sse".
//
// That mirrors the vendors' public endpoints (https://api.anthropic.com,
// https://api.openai.com/v1, https://generativelanguage.googleapis.com).
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"switchboard/llm"
)

// Reply is what the fake answers to one request.
type Reply struct {
	Text                      string // the reply text, streamed in Chunks pieces (default: split into ~3 pieces)
	Chunks                    int
	ToolCalls                 []llm.ToolCall // IDs may be empty: the fake then makes some up (not for gemini, whose API sends none)
	InputTokens, OutputTokens int64          // reported usage (default: 11 and 7 when both zero)
	Status                    int            // non-zero: answer with this HTTP status and the vendor's error JSON body
	CutAfter                  int            // >0: send this many text chunks (with usage reported so far) then end the stream abruptly without the final event
	Delay                     time.Duration  // optional delay before the first byte
}

// Default usage a Reply reports when it sets none.
const (
	DefaultInputTokens  = 11
	DefaultOutputTokens = 7
)

// Recorded is one request as the fake received it, decoded back from the vendor's wire shape.
type Recorded struct {
	Path   string
	Model  string
	System string
	// Temperature and MaxTokens as sent (nil and 0 when absent).
	Temperature *float64
	MaxTokens   int
	Messages    []llm.Message // text, tool calls and tool results
	Tools       []string      // names of the tools offered
	Stream      bool
	APIKey      string // the key the adapter sent (x-api-key / Bearer / x-goog-api-key or ?key=)
}

// Fake is a fake vendor: an httptest.Server, closed when the test ends.
type Fake struct {
	URL string // the base URL to give the adapter

	wire     wire
	mu       sync.Mutex
	replies  []Reply
	requests []Recorded
}

// wire is one vendor's side of its protocol.
type wire interface {
	name() string
	basePath() string // appended to the server URL to form Fake.URL
	// decode reads a request; a non-zero status rejects it the way the vendor would.
	decode(r *http.Request) (received, int, error)
	errorBody(status int, message string) any
	respond(w http.ResponseWriter, in received, reply Reply)
}

// received is a decoded request: what gets recorded, plus options that shape the answer.
type received struct {
	Recorded
	includeUsage bool // openai: stream_options.include_usage
}

// NewAnthropic starts a fake Anthropic Messages API.
func NewAnthropic(t testing.TB) *Fake { t.Helper(); return start(t, anthropicWire{}) }

// NewOpenAI starts a fake OpenAI Chat Completions API.
func NewOpenAI(t testing.TB) *Fake { t.Helper(); return start(t, openaiWire{}) }

// NewGemini starts a fake Gemini API.
func NewGemini(t testing.TB) *Fake { t.Helper(); return start(t, geminiWire{}) }

// New starts the fake for a protocol name: anthropic, openai or gemini.
func New(t testing.TB, protocol string) *Fake {
	t.Helper()
	switch protocol {
	case llm.ProtocolAnthropic:
		return NewAnthropic(t)
	case llm.ProtocolOpenAI:
		return NewOpenAI(t)
	case llm.ProtocolGemini:
		return NewGemini(t)
	}
	t.Fatalf("llmtest: unknown protocol %q", protocol)
	return nil
}

func start(t testing.TB, w wire) *Fake {
	f := &Fake{wire: w}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL + w.basePath()
	return f
}

// Protocol is the protocol name the fake speaks.
func (f *Fake) Protocol() string { return f.wire.name() }

// Push queues replies, answered in order. With the queue empty the fake answers
// "reply to: <last user text>" with the default usage.
func (f *Fake) Push(replies ...Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies = append(f.replies, replies...)
}

// Requests returns everything received so far, in order.
func (f *Fake) Requests() []Recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Recorded(nil), f.requests...)
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	in, status, err := f.wire.decode(r)
	if status != 0 {
		writeJSON(w, status, f.wire.errorBody(status, err.Error()))
		return
	}
	reply := f.take(in.Recorded)
	if !sleep(r, reply.Delay) {
		return
	}
	if reply.Status != 0 {
		writeJSON(w, reply.Status, f.wire.errorBody(reply.Status, fmt.Sprintf("fake error with status %d", reply.Status)))
		return
	}
	f.wire.respond(w, in, reply.withDefaults())
}

// take records a request and pops the reply to it.
func (f *Fake) take(rec Recorded) Reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, rec)
	if len(f.replies) == 0 {
		return Reply{Text: "reply to: " + lastUserText(rec.Messages)}
	}
	reply := f.replies[0]
	f.replies = f.replies[1:]
	return reply
}

func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (r Reply) withDefaults() Reply {
	if r.Chunks <= 0 {
		r.Chunks = 3
	}
	if r.InputTokens == 0 && r.OutputTokens == 0 {
		r.InputTokens, r.OutputTokens = DefaultInputTokens, DefaultOutputTokens
	}
	return r
}

// pieces splits the text into Chunks pieces of about equal length.
func (r Reply) pieces() []string {
	runes := []rune(r.Text)
	n := min(r.Chunks, len(runes))
	var out []string
	for i := range n {
		out = append(out, string(runes[i*len(runes)/n:(i+1)*len(runes)/n]))
	}
	return out
}

// sent is the pieces actually sent: all of them, or the first CutAfter.
func (r Reply) sent() []string {
	p := r.pieces()
	if r.CutAfter > 0 && r.CutAfter < len(p) {
		return p[:r.CutAfter]
	}
	return p
}

// halves splits a tool call's arguments in two, so they arrive in more than one delta.
func halves(args json.RawMessage) []string {
	s := string(args)
	if len(s) < 2 {
		return []string{s}
	}
	return []string{s[:len(s)/2], s[len(s)/2:]}
}

func lastUserText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].Text
		}
	}
	return ""
}

func args(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// writeCut answers a non-streaming request whose Reply has CutAfter: the first half of the
// body, which no client can parse.
func writeCut(w http.ResponseWriter, body any) {
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b[:len(b)/2])
}

// sse writes a server-sent event stream, flushing every event so deltas arrive one by one.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w}
}

// event writes one event; name may be empty (OpenAI and Gemini send data lines only).
func (s *sse) event(name string, data any) {
	b, _ := json.Marshal(data)
	s.raw(name, string(b))
}

func (s *sse) raw(name, data string) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// compact normalises JSON so recorded arguments compare equal whatever the SDK's spacing.
func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return json.RawMessage(b.Bytes())
}

// textOf reads a field that is either a JSON string or a list of {"type":"text","text":...}
// parts, as several vendors allow.
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out string
	for _, p := range parts {
		out += p.Text
	}
	return out
}

// toolNames remembers which tool each call id named, since tool results on the wire
// often carry only the id.
type toolNames map[string]string

func (n toolNames) add(calls []llm.ToolCall) {
	for _, c := range calls {
		n[c.ID] = c.Name
	}
}
