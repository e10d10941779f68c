package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
)

// failure is what an adapter knows about a failed call, in vendor-neutral terms. The adapters
// fill it from their SDK's error types; toError turns it into the one *Error callers see.
type failure struct {
	err     error
	status  int  // the vendor's HTTP status, or the status its in-stream error stands for; 0 if none
	refused bool // the vendor itself answered with an error
	started bool // the response had begun to arrive
}

// toError classifies the failure. Messages never carry the vendor's name, the base URL or the
// key: they may be shown to API callers. The cause stays in Err for the logs.
func (f failure) toError(ctx context.Context) *Error {
	var e *Error
	if errors.As(f.err, &e) {
		return e
	}
	switch {
	case isTimeout(ctx, f.err):
		return &Error{Kind: ErrTimeout, Message: "the model provider did not answer in time", Err: f.err}
	case errors.Is(f.err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return &Error{Kind: ErrCancelled, Message: "the model call was cancelled", Err: f.err}
	case f.status == http.StatusTooManyRequests:
		return &Error{Kind: ErrRateLimited, Status: f.status, Message: "the model provider is rate limiting requests; try again later", Err: f.err}
	case f.status >= 400:
		return &Error{Kind: ErrUpstream, Status: f.status, Message: fmt.Sprintf("the model provider answered with HTTP %d", f.status), Err: f.err}
	case f.refused:
		return &Error{Kind: ErrUpstream, Message: "the model provider reported an error", Err: f.err}
	case f.started || !isTransport(f.err):
		// A connection lost mid-stream, or a response that did not parse.
		return malformed("the model provider's response could not be read", f.err)
	default:
		return &Error{Kind: ErrUpstream, Message: "the model provider could not be reached", Err: f.err}
	}
}

func malformed(message string, cause error) *Error {
	return &Error{Kind: ErrMalformed, Message: message, Err: cause}
}

// truncated is the error for a stream that ended without the vendor's final event.
func truncated() *Error {
	return malformed("the model provider's response stream ended before the reply was complete", nil)
}

func isTimeout(ctx context.Context, err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isTransport tells a request that never got an answer (refused connection, DNS, TLS)
// from one whose answer could not be read.
func isTransport(err error) bool {
	var urlErr *url.Error
	var netErr net.Error
	return errors.As(err, &urlErr) || errors.As(err, &netErr)
}
