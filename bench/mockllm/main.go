// Command mockllm is a fast, configurable mock of the three model-vendor wire protocols
// Switchboard speaks, for benchmarks:
//
//	anthropic  POST {prefix}/v1/messages                                  (JSON, or SSE with "stream":true)
//	openai     POST {prefix}/chat/completions  (base URL ends with /v1)   (JSON, or SSE with "stream":true)
//	gemini     POST {prefix}/v1beta/models/{model}:generateContent        (JSON)
//	           POST {prefix}/v1beta/models/{model}:streamGenerateContent?alt=sse   (SSE)
//
// Two modes:
//
//	instant  the whole answer is written at once (one write, one flush);
//	paced    the status line and the stream's preamble at once, the first token after -ttft,
//	         then the remaining chunks one every -interval, each flushed on its own.
//
// -mode sets the mode of every request; models whose name starts with -paced-prefix are paced
// whatever -mode says, so one mock (and one Switchboard process) can serve both kinds (point a
// catalog model's upstream name at "paced-..." with MODELS_FILE). A model name may end with
// "@key=value,..." to override -ttft, -interval and -chunks for that model alone, e.g.
// "paced-long@ttft=50ms,interval=200ms,chunks=15". The option echo=1 makes each chunk of the
// answer "re: " and the text of the request's last user message, so that a benchmark can tell
// which message an answer answers (bench/run.sh sms); such answers are rendered per request.
// The option search=1 makes the model an agent that searches first (bench/run.sh agents):
// when the request offers the tool search_knowledge_base and holds no tool result after its
// last user message (the turn has not searched yet), the
// answer is a call of that tool whose query is the text of the last user message (the load
// generator sends a few words of its corpus); otherwise it is the usual text, and the
// request counts as answered from a search (`from_search` in /stats: a search ran in the
// turn, whether the model asked for it or the server ran it first).
//
// Answers are pre-rendered per protocol and model, so the mock costs as little as possible
// next to the server it measures. -capture DIR writes the first request of each protocol and
// model as JSON ({method, path, header, body}), so a load generator can replay exactly the
// request the server sends (the direct baseline of the benchmarks).
//
// GET /health answers ok; GET /stats reports the requests served.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
)

type config struct {
	mode         string
	pacedPrefix  string
	ttft         time.Duration
	interval     time.Duration
	chunks       int
	chunkText    string
	inputTokens  int
	outputTokens int
	captureDir   string
	echo         bool // a model's echo=1 option, never a flag
	search       bool // a model's search=1 option, never a flag
}

func main() {
	var cfg config
	addr := flag.String("addr", "127.0.0.1:0", "listen address (port 0: any free port)")
	addrFile := flag.String("addr-file", "", "write the address actually listened on to this file")
	flag.StringVar(&cfg.mode, "mode", "instant", "instant or paced")
	flag.StringVar(&cfg.pacedPrefix, "paced-prefix", "paced-", "models whose name starts with this are paced whatever -mode says (empty: none)")
	flag.DurationVar(&cfg.ttft, "ttft", 50*time.Millisecond, "paced: delay before the first token")
	flag.DurationVar(&cfg.interval, "interval", 10*time.Millisecond, "paced: delay between chunks")
	flag.IntVar(&cfg.chunks, "chunks", 5, "text chunks per answer")
	flag.StringVar(&cfg.chunkText, "chunk-text", "lorem ipsum ", "text of each chunk")
	flag.IntVar(&cfg.inputTokens, "input-tokens", 11, "prompt tokens reported in the usage")
	flag.IntVar(&cfg.outputTokens, "output-tokens", 0, "completion tokens reported (0: one per chunk)")
	flag.StringVar(&cfg.captureDir, "capture", "", "write the first request of each protocol and model to this directory")
	flag.Parse()
	if cfg.mode != "instant" && cfg.mode != "paced" {
		log.Fatalf("mockllm: -mode must be instant or paced, not %q", cfg.mode)
	}
	if cfg.chunks < 1 {
		log.Fatalf("mockllm: -chunks must be at least 1")
	}
	if cfg.captureDir != "" {
		if err := os.MkdirAll(cfg.captureDir, 0o755); err != nil {
			log.Fatal(err)
		}
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	m := &mock{cfg: cfg}
	srv := &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	fmt.Fprintf(os.Stderr, "mockllm: listening on %s (mode %s, paced prefix %q, ttft %s, %d chunks every %s)\n",
		ln.Addr(), cfg.mode, cfg.pacedPrefix, cfg.ttft, cfg.chunks, cfg.interval)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "mockllm: served %s\n", m.statsJSON())
}

type mock struct {
	cfg      config
	rendered sync.Map // key{protocol, model, includeUsage} -> *answer
	captured sync.Map // capture file name -> true

	anthropic, openai, gemini, errors atomic.Int64
	fromSearch                        atomic.Int64 // search=1 requests answered in text after a tool result
}

func (m *mock) statsJSON() []byte {
	b, _ := json.Marshal(map[string]int64{"anthropic": m.anthropic.Load(), "openai": m.openai.Load(),
		"gemini": m.gemini.Load(), "errors": m.errors.Load(), "from_search": m.fromSearch.Load()})
	return b
}

// request is what the mock needs from a request body; everything else is checked to be JSON
// and ignored.
type request struct {
	Model        string
	Stream       bool
	IncludeUsage bool // stream_options.include_usage
}

// parseRequest reads the request's three fields with gjson instead of encoding/json. The
// builder assistant's requests carry 17 KB of system prompt and tool schemas, and
// json.Unmarshal scans such a body twice, byte by byte: 150-200 µs a request on the
// reference machine, about half the mock's CPU for a stored turn, spent on work a real
// vendor does on its own machines. gjson validates the body, then walks its top level once
// (3 times as fast on a captured request, 4 times on BenchmarkParseRequest's synthetic one).
// Malformed bodies and fields of the wrong type are still refused.
func parseRequest(body []byte) (request, error) {
	if !gjson.ValidBytes(body) {
		return request{}, errors.New("body is not JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return request{}, errors.New("body is not a JSON object")
	}
	var req request
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			if v.Type != gjson.String {
				err = errors.New("model is not a string")
			}
			req.Model = v.Str
		case "stream":
			req.Stream, err = boolean("stream", v)
		case "stream_options":
			req.IncludeUsage, err = boolean("stream_options.include_usage", v.Get("include_usage"))
		}
		return err == nil
	})
	return req, err
}

// boolean is a field that is true, false, null or absent.
func boolean(name string, v gjson.Result) (bool, error) {
	switch v.Type {
	case gjson.True, gjson.False, gjson.Null:
		return v.Bool(), nil
	}
	return false, errors.New(name + " is not a boolean")
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (m *mock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if r.Method == http.MethodGet {
		switch path {
		case "/health":
			_, _ = io.WriteString(w, "ok\n")
		case "/stats":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(m.statsJSON())
		default:
			http.NotFound(w, r)
		}
		return
	}
	if r.Method != http.MethodPost {
		m.fail(w, http.StatusMethodNotAllowed, "POST only")
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, 8<<20)); err != nil {
		m.fail(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	req, err := parseRequest(buf.Bytes())
	if err != nil {
		m.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	var protocol string
	switch {
	case strings.HasSuffix(path, "/v1/messages"):
		protocol = "anthropic"
		m.anthropic.Add(1)
	case strings.HasSuffix(path, "/chat/completions"):
		protocol = "openai"
		m.openai.Add(1)
	default:
		model, method, ok := geminiRoute(path)
		if !ok {
			m.fail(w, http.StatusNotFound, "no route for POST "+path)
			return
		}
		protocol, req.Model, req.Stream = "gemini", model, method == "streamGenerateContent"
		req.IncludeUsage = true
		if req.Stream && r.URL.Query().Get("alt") != "sse" {
			m.fail(w, http.StatusBadRequest, "this mock streams gemini only with alt=sse")
			return
		}
		m.gemini.Add(1)
	}
	if req.Model == "" {
		m.fail(w, http.StatusBadRequest, "model is required")
		return
	}
	if m.cfg.captureDir != "" {
		m.capture(protocol, req.Model, r, buf.Bytes())
	}
	a := m.answer(protocol, req.Model, req.IncludeUsage)
	if a.err != nil {
		m.fail(w, http.StatusBadRequest, a.err.Error())
		return
	}
	searching := a.search && offersSearch(buf.Bytes())
	switch {
	case searching && !hasToolResult(protocol, buf.Bytes()):
		a = m.searchCall(protocol, req.Model, req.IncludeUsage, buf.Bytes())
	case searching:
		m.fromSearch.Add(1)
		fallthrough
	default:
		if a.echo {
			a = m.echoed(protocol, req.Model, req.IncludeUsage, buf.Bytes())
		}
	}
	paced := a.paced
	if !req.Stream {
		if paced { // the whole answer, once the last chunk would have been generated
			t := time.NewTimer(a.ttft + time.Duration(len(a.chunks)-1)*a.interval)
			select {
			case <-r.Context().Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(a.json)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	if !paced {
		_, _ = w.Write(a.all)
		return
	}
	m.pace(w, r, a)
}

// pace writes the preamble at once, the first chunk after the ttft, then a chunk every
// interval, flushing each. Timers are scheduled from the request's arrival, so a slow write
// does not shift the whole schedule.
func (m *mock) pace(w http.ResponseWriter, r *http.Request, a *answer) {
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	start := time.Now()
	w.WriteHeader(http.StatusOK)
	if len(a.head) > 0 {
		_, _ = w.Write(a.head)
	}
	flush()
	timer := time.NewTimer(a.ttft)
	defer timer.Stop()
	for i, chunk := range a.chunks {
		select {
		case <-r.Context().Done():
			return
		case <-timer.C:
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
		if i == len(a.chunks)-1 {
			_, _ = w.Write(a.tail)
		}
		flush()
		if i < len(a.chunks)-1 {
			next := a.ttft + time.Duration(i+1)*a.interval
			timer.Reset(max(0, next-time.Since(start)))
		}
	}
}

func (m *mock) fail(w http.ResponseWriter, status int, msg string) {
	m.errors.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "mockllm: " + msg, "type": "invalid_request_error"}})
	_, _ = w.Write(b)
}

// geminiRoute splits "/v1beta/models/{model}:{method}", after any prefix.
func geminiRoute(path string) (model, method string, ok bool) {
	i := strings.Index(path, "/v1beta/models/")
	if i < 0 {
		return "", "", false
	}
	model, method, found := strings.Cut(path[i+len("/v1beta/models/"):], ":")
	return model, method, found && model != "" && (method == "generateContent" || method == "streamGenerateContent")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// capture writes the first request of a protocol and model, for replay.
func (m *mock) capture(protocol, model string, r *http.Request, body []byte) {
	name := protocol + "-" + unsafeName.ReplaceAllString(model, "_") + ".json"
	if _, done := m.captured.LoadOrStore(name, true); done {
		return
	}
	header := map[string]string{}
	for k, v := range r.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Connection", "Accept-Encoding", "Keep-Alive":
			continue
		}
		header[k] = strings.Join(v, ", ")
	}
	rec, _ := json.MarshalIndent(map[string]any{"protocol": protocol, "model": model, "method": r.Method,
		"path": r.URL.RequestURI(), "header": header, "body": string(body)}, "", "  ")
	tmp := filepath.Join(m.cfg.captureDir, "."+name)
	if err := os.WriteFile(tmp, rec, 0o644); err == nil {
		_ = os.Rename(tmp, filepath.Join(m.cfg.captureDir, name))
	}
}

// answer is one pre-rendered reply: the JSON body, and the SSE stream as preamble, one frame
// per text chunk and the closing frames (all is their concatenation), with the pacing of its
// model.
type answer struct {
	err            error // a model name with bad @options
	paced          bool
	echo           bool // a template: render it again per request with the echo (echoed)
	search         bool // the model's search=1: a tool call when the request asks for one (searchCall)
	ttft, interval time.Duration
	json           []byte
	head           []byte
	chunks         [][]byte
	tail           []byte
	all            []byte
}

type answerKey struct {
	protocol, model string
	includeUsage    bool
}

func (m *mock) answer(protocol, model string, includeUsage bool) *answer {
	k := answerKey{protocol, model, includeUsage}
	if a, ok := m.rendered.Load(k); ok {
		return a.(*answer)
	}
	a := m.render(k)
	m.rendered.Store(k, a)
	return a
}

// modelConfig applies a model name's "@key=value,..." overrides to the flags.
func (m *mock) modelConfig(model string) (config, bool, error) {
	c := m.cfg
	c.echo, c.search = false, false
	paced := c.mode == "paced" || (c.pacedPrefix != "" && strings.HasPrefix(model, c.pacedPrefix))
	_, opts, found := strings.Cut(model, "@")
	if !found {
		return c, paced, nil
	}
	for _, kv := range strings.Split(opts, ",") {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "ttft":
			c.ttft, err = time.ParseDuration(v)
		case "interval":
			c.interval, err = time.ParseDuration(v)
		case "chunks":
			_, err = fmt.Sscan(v, &c.chunks)
			if err == nil && c.chunks < 1 {
				err = errors.New("must be at least 1")
			}
		case "echo":
			c.echo = v == "1" || v == "true"
			if !c.echo && v != "0" && v != "false" {
				err = errors.New("must be 1 or 0")
			}
		case "search":
			c.search = v == "1" || v == "true"
			if !c.search && v != "0" && v != "false" {
				err = errors.New("must be 1 or 0")
			}
		default:
			err = errors.New("unknown option (ttft, interval, chunks, echo, search)")
		}
		if err != nil {
			return c, paced, fmt.Errorf("model %q: option %q: %v", model, kv, err)
		}
	}
	return c, paced, nil
}

func (m *mock) render(k answerKey) *answer {
	c, paced, err := m.modelConfig(k.model)
	if err != nil {
		return &answer{err: err}
	}
	if c.echo {
		return &answer{paced: paced, echo: true, search: c.search}
	}
	a := renderWith(k, c, paced)
	a.search = c.search
	return a
}

// echoed renders an echo=1 model's answer for one request: each chunk is "re: " and the
// request's last user message.
func (m *mock) echoed(protocol, model string, includeUsage bool, body []byte) *answer {
	c, paced, _ := m.modelConfig(model) // checked when the template was rendered
	c.chunkText = "re: " + lastUserText(protocol, body)
	return renderWith(answerKey{protocol, model, includeUsage}, c, paced)
}

// lastUserText is the text of the last user message of a request of protocol: a string
// content, or its text parts joined.
func lastUserText(protocol string, body []byte) string {
	list, role, content := "messages", "user", "content"
	if protocol == "gemini" {
		list, content = "contents", "parts"
	}
	var last gjson.Result
	gjson.GetBytes(body, list).ForEach(func(_, msg gjson.Result) bool {
		if r := msg.Get("role"); r.Str == role || (protocol == "gemini" && !r.Exists()) {
			last = msg.Get(content)
		}
		return true
	})
	if last.Type == gjson.String {
		return last.Str
	}
	var parts []string
	last.ForEach(func(_, part gjson.Result) bool {
		if t := part.Get("text"); t.Type == gjson.String && (protocol == "gemini" || part.Get("type").Str == "text") {
			parts = append(parts, t.Str)
		}
		return true
	})
	return strings.Join(parts, " ")
}

// renderWith renders the answer of k with the settings c.
func renderWith(k answerKey, c config, paced bool) *answer {
	text := strings.Repeat(c.chunkText, c.chunks)
	in, out := c.inputTokens, c.outputTokens
	if out <= 0 {
		out = c.chunks
	}
	a := &answer{paced: paced, ttft: c.ttft, interval: c.interval}
	var head, tail bytes.Buffer
	frame := func(b *bytes.Buffer, event string, data any) {
		if event != "" {
			fmt.Fprintf(b, "event: %s\n", event)
		}
		raw, _ := json.Marshal(data)
		fmt.Fprintf(b, "data: %s\n\n", raw)
	}
	chunk := func(event string, data any) {
		var b bytes.Buffer
		frame(&b, event, data)
		a.chunks = append(a.chunks, b.Bytes())
	}
	switch k.protocol {
	case "anthropic":
		msg := func(content []any, stop any, outTokens int) map[string]any {
			return map[string]any{"id": "msg_mock", "type": "message", "role": "assistant", "model": k.model,
				"content": content, "stop_reason": stop, "stop_sequence": nil,
				"usage": map[string]any{"input_tokens": in, "output_tokens": outTokens}}
		}
		a.json, _ = json.Marshal(msg([]any{map[string]any{"type": "text", "text": text}}, "end_turn", out))
		frame(&head, "message_start", map[string]any{"type": "message_start", "message": msg([]any{}, nil, 1)})
		frame(&head, "ping", map[string]any{"type": "ping"})
		frame(&head, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for range c.chunks {
			chunk("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": c.chunkText}})
		}
		frame(&tail, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		frame(&tail, "message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}})
		frame(&tail, "message_stop", map[string]any{"type": "message_stop"})
	case "openai":
		usage := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
		envelope := func(object string) map[string]any {
			return map[string]any{"id": "chatcmpl-mock", "object": object, "created": 1700000000, "model": k.model}
		}
		body := envelope("chat.completion")
		body["choices"] = []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": text}}}
		body["usage"] = usage
		a.json, _ = json.Marshal(body)
		delta := func(d map[string]any, finish any) map[string]any {
			e := envelope("chat.completion.chunk")
			e["choices"] = []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish, "logprobs": nil}}
			if k.includeUsage {
				e["usage"] = nil
			}
			return e
		}
		frame(&head, "", delta(map[string]any{"role": "assistant", "content": ""}, nil))
		for range c.chunks {
			chunk("", delta(map[string]any{"content": c.chunkText}, nil))
		}
		frame(&tail, "", delta(map[string]any{}, "stop"))
		if k.includeUsage {
			last := envelope("chat.completion.chunk")
			last["choices"], last["usage"] = []any{}, usage
			frame(&tail, "", last)
		}
		tail.WriteString("data: [DONE]\n\n")
	case "gemini":
		usage := func(final bool) map[string]any {
			u := map[string]any{"promptTokenCount": in, "totalTokenCount": in}
			if final {
				u["candidatesTokenCount"], u["totalTokenCount"] = out, in+out
			}
			return u
		}
		resp := func(cand map[string]any, final bool) map[string]any {
			return map[string]any{"candidates": []any{cand}, "usageMetadata": usage(final), "modelVersion": k.model, "responseId": "mock-response"}
		}
		textCand := func(t string) map[string]any {
			return map[string]any{"index": 0, "content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": t}}}}
		}
		whole := textCand(text)
		whole["finishReason"] = "STOP"
		a.json, _ = json.Marshal(resp(whole, true))
		for range c.chunks {
			chunk("", resp(textCand(c.chunkText), false))
		}
		frame(&tail, "", resp(map[string]any{"index": 0, "finishReason": "STOP"}, true))
	}
	a.head, a.tail = head.Bytes(), tail.Bytes()
	all := append([]byte(nil), a.head...)
	for _, ch := range a.chunks {
		all = append(all, ch...)
	}
	a.all = append(all, a.tail...)
	return a
}
