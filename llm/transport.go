package llm

import (
	"net/http"
)

// wholeBodies is the RoundTripper under the openai SDK. The SDK wraps every attempt's body
// in its own close-once reader, which net/http cannot recognise as
// in memory: it then flushes the headers on their own and writes the body after them, two
// writes (and two segments for the vendor to read) per call. The SDK also sets GetBody (the
// body's bytes, for retries); wholeBodies sends a fresh copy of those bytes instead, which
// net/http writes together with the headers. The SDK's request is not modified (a shallow
// copy carries the new body) and its own body is closed, as a RoundTripper must. (The
// anthropic SDK sends its body as an in-memory reader already.)
type wholeBodies struct{ next http.RoundTripper }

func (t wholeBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.GetBody == nil || req.Body == nil || req.Body == http.NoBody || req.ContentLength <= 0 {
		return t.next.RoundTrip(req)
	}
	body, err := req.GetBody()
	if err != nil || body == nil {
		return t.next.RoundTrip(req)
	}
	_ = req.Body.Close()
	r := *req
	r.Body = body
	return t.next.RoundTrip(&r)
}

// withWholeBodies returns a copy of c whose transport is wrapped by wholeBodies (nil: the
// default client's transport, as the SDKs would use).
func withWholeBodies(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	next := out.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	if _, done := next.(wholeBodies); !done {
		out.Transport = wholeBodies{next: next}
	}
	return &out
}
