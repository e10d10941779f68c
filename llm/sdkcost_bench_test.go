package llm

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkOpenAICallOverhead measures what the official SDK's request machinery costs per
// call: the adapter's Generate (through the openai-go client) beside a bare net/http POST of
// the same body, answered by the same in-process server with the mock vendor's reply and
// decoded the same way. Run with -cpuprofile to split the client's CPU from the server's.
// The design keeps the SDK (docs/benchmarks.md, tenth pass, has the figures).
func BenchmarkOpenAICallOverhead(b *testing.B) {
	reply := `{"choices":[{"finish_reason":"stop","index":0,"logprobs":null,"message":{"content":"lorem ipsum lorem ipsum ","role":"assistant"}}],` +
		`"created":1700000000,"id":"chatcmpl-mock","model":"beta-5.4","object":"chat.completion","usage":{"completion_tokens":5,"prompt_tokens":11,"total_tokens":16}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
	}))
	defer srv.Close()
	req := Request{Model: "beta-5.4", Messages: []Message{{Role: RoleUser, Text: "hi"}}}

	b.Run("sdk", func(b *testing.B) {
		c, err := New(Config{Protocol: ProtocolOpenAI, BaseURL: srv.URL + "/v1", APIKey: "k", HTTPClient: srv.Client()})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Generate(context.Background(), req, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("net-http", func(b *testing.B) {
		body, ok := openaiBody(req, false)
		if !ok {
			b.Fatal("no body")
		}
		client := srv.Client()
		b.ReportAllocs()
		for b.Loop() {
			r, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer k")
			resp, err := client.Do(r)
			if err != nil {
				b.Fatal(err)
			}
			var out openaiCompletion
			if err := decodeReply(resp, &out); err != nil || len(out.Choices) != 1 {
				b.Fatal(err, out)
			}
		}
	})
}
