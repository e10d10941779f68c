// Package contract checks HTTP traffic against an OpenAPI document in tests. Its Transport
// wraps a client's RoundTripper and validates every response of a documented operation
// (status, headers, JSON body) with kin-openapi, so that code and contract cannot drift:
// any client driving the server in a test, official SDKs included, is checked for free.
// Event streams are checked frame by frame, as the client reads them, against the schemas
// that their operation's `x-sse-frames` extension names (see frames.go).
package contract

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Validator holds a loaded document and its router.
type Validator struct {
	spec   *openapi3.T
	router routers.Router
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*Validator{}
)

// Load parses an OpenAPI document (once per process per document).
func Load(t testing.TB, doc []byte) *Validator {
	t.Helper()
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if v, ok := cache[string(doc)]; ok {
		return v
	}
	spec, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		t.Fatalf("load OpenAPI document: %v", err)
	}
	if err := spec.Validate(context.Background()); err != nil {
		t.Fatalf("OpenAPI document is invalid: %v", err)
	}
	if err := checkFrameLists(spec); err != nil {
		t.Fatalf("OpenAPI document is invalid: %v", err)
	}
	spec.Servers = nil
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		t.Fatalf("route OpenAPI document: %v", err)
	}
	v := &Validator{spec: spec, router: router}
	cache[string(doc)] = v
	return v
}

// Transport returns a RoundTripper that validates each response against the document and
// fails t on any violation. Requests to routes the document does not describe pass unchecked.
func (v *Validator) Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper{t: t, v: v, base: base}
}

// Client is an *http.Client using Transport.
func (v *Validator) Client(t testing.TB) *http.Client {
	return &http.Client{Transport: v.Transport(t, nil)}
}

// Client returns an *http.Client that checks every response against each of the documents
// whose operations it belongs to.
func Client(t testing.TB, validators ...*Validator) *http.Client {
	rt := http.DefaultTransport
	for _, v := range validators {
		rt = v.Transport(t, rt)
	}
	return &http.Client{Transport: rt}
}

type roundTripper struct {
	t    testing.TB
	v    *Validator
	base http.RoundTripper
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if verr := rt.v.Check(req, resp); verr != nil {
		rt.t.Errorf("contract violation: %s %s -> %d: %v", req.Method, req.URL.Path, resp.StatusCode, verr)
	}
	if frames := rt.v.frameList(req, resp); frames != nil {
		resp.Body = &frameChecker{body: resp.Body, check: func(n int, f frame) {
			if err := rt.v.checkListed(frames, f); err != nil {
				rt.t.Errorf("contract violation: %s %s, frame %d (event %q): %v", req.Method, req.URL.Path, n, f.event, err)
			}
		}}
	}
	return resp, nil
}

// Check validates one response. A JSON body is read and put back; an event stream's body is
// left alone: the Transport checks its frames as the client reads them.
func (v *Validator) Check(req *http.Request, resp *http.Response) error {
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		return nil //nolint:nilerr // not an operation of this document: nothing to check
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mediaType == "text/event-stream" {
		input.Options.ExcludeResponseBody = true
	} else {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("read body: %w", err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		input.SetBodyBytes(body)
	}
	return openapi3filter.ValidateResponse(context.Background(), input)
}
