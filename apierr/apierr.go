// Package apierr is the one domain error type of Switchboard. Every layer returns it for
// failures a caller can act on; the HTTP error handler and the MCP tool layer turn it into
// their envelopes. Anything that is not an *Error is an internal failure and is never shown.
package apierr

import (
	"errors"
	"fmt"
	"net/http"
)

// Kind classifies an error; each kind has one HTTP status and one envelope type.
type Kind int

// The kinds, each mapped to its status and envelope type by Status and Type.
const (
	KindInternal Kind = iota
	KindInvalid
	KindUnauthenticated
	KindPermission
	KindQuota
	KindNotFound
	KindMethodNotAllowed
	KindConflict
	KindTooLarge
	KindUnprocessable
	KindRateLimited
	KindUpstream
	KindNotImplemented
	KindUnsupportedMediaType
	// KindTimeout is a request that did not arrive in time (a body sent too slowly).
	KindTimeout
	// KindUnavailable is a dependency the request needs that is down for now (the database):
	// the same request succeeds later, so the answer carries Retry-After.
	KindUnavailable
)

var kinds = map[Kind]struct {
	status int
	typ    string
}{
	KindInternal:         {http.StatusInternalServerError, "server_error"},
	KindInvalid:          {http.StatusBadRequest, "invalid_request_error"},
	KindUnauthenticated:  {http.StatusUnauthorized, "authentication_error"},
	KindPermission:       {http.StatusForbidden, "permission_error"},
	KindQuota:            {http.StatusForbidden, "insufficient_quota"},
	KindNotFound:         {http.StatusNotFound, "not_found_error"},
	KindMethodNotAllowed: {http.StatusMethodNotAllowed, "invalid_request_error"},
	KindConflict:         {http.StatusConflict, "conflict_error"},
	KindTooLarge:         {http.StatusRequestEntityTooLarge, "invalid_request_error"},
	KindUnprocessable:    {http.StatusUnprocessableEntity, "invalid_request_error"},
	KindRateLimited:      {http.StatusTooManyRequests, "rate_limit_error"},
	KindUpstream:         {http.StatusInternalServerError, "server_error"},
	KindNotImplemented:   {http.StatusNotImplemented, "server_error"},
	// A body of a type the operation does not read (an upload that is not text, Markdown,
	// HTML or PDF).
	KindUnsupportedMediaType: {http.StatusUnsupportedMediaType, "invalid_request_error"},
	KindTimeout:              {http.StatusRequestTimeout, "invalid_request_error"},
	KindUnavailable:          {http.StatusServiceUnavailable, "server_error"},
}

// Error is a failure with a public message. Err, if set, is the internal cause: it is logged,
// never returned to the caller.
type Error struct {
	Kind    Kind
	Message string
	Param   string // the offending field or parameter, empty when none
	Code    string // a stable machine-readable code, empty when none
	Hint    string // what the caller can do next; defaulted per kind where the contract requires it
	Err     error
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Param != "" {
		msg = e.Param + ": " + msg
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Status is the HTTP status of the error's kind.
func (e *Error) Status() int { return kinds[e.Kind].status }

// Type is the envelope `type` of the error's kind.
func (e *Error) Type() string { return kinds[e.Kind].typ }

// Public is an error of another layer that knows its public form, such as the store's
// not-found: As turns it into an *Error, so the one status table maps it and no caller has
// to translate it.
type Public interface {
	error
	Public() *Error
}

// As returns the *Error in err's chain (or the public form of a Public error), or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var p Public
	if errors.As(err, &p) {
		return p.Public()
	}
	return nil
}

// WithParam names the request field an error is about (a 404 of a row looked up by the
// field `conversation`, say). Errors without a public form, and nil, pass unchanged.
func WithParam(err error, param string) error {
	e := As(err)
	if e == nil {
		return err
	}
	copied := *e
	copied.Param = param
	return &copied
}

// IsKind reports whether err carries an *Error of kind k.
func IsKind(err error, k Kind) bool {
	e := As(err)
	return e != nil && e.Kind == k
}

// Invalid is a 400 naming the offending field.
func Invalid(param, code, format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Param: param, Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFound is a 404.
func NotFound(param, code, format string, args ...any) *Error {
	return &Error{Kind: KindNotFound, Param: param, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unauthenticated is a 401.
func Unauthenticated(code, format string, args ...any) *Error {
	return &Error{Kind: KindUnauthenticated, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Quota is a 403 insufficient_quota: the workspace may not spend.
func Quota(format string, args ...any) *Error {
	return &Error{Kind: KindQuota, Code: "insufficient_quota", Message: fmt.Sprintf(format, args...)}
}

// Conflict is a 409.
func Conflict(code, format string, args ...any) *Error {
	return &Error{Kind: KindConflict, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unprocessable is a 422.
func Unprocessable(param, code, format string, args ...any) *Error {
	return &Error{Kind: KindUnprocessable, Param: param, Code: code, Message: fmt.Sprintf(format, args...)}
}

// DatabaseUnavailable is the 503 of a request that needed PostgreSQL while it could not be
// reached; err is the cause, logged and never shown.
func DatabaseUnavailable(err error) *Error {
	return &Error{Kind: KindUnavailable, Code: "database_unavailable", Err: err,
		Message: "The database is unavailable for a moment; nothing was done. Retry after the number of seconds in the Retry-After header."}
}

// Internal wraps an unexpected failure; the caller only sees a generic message.
func Internal(err error) *Error {
	return &Error{Kind: KindInternal, Message: "The server had an error while processing your request.", Err: err}
}
