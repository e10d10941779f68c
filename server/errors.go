package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"

	"switchboard/apierr"
	"switchboard/httpdeadline"
	"switchboard/store"
)

// envelope is the error body of every surface: {error:{message,type,param,code}} plus hint
// and docs_url on 401, 429 and 500.
type envelope struct {
	Error envelopeError `json:"error"`
}

type envelopeError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	Hint    string  `json:"hint,omitempty"`
	DocsURL string  `json:"docs_url,omitempty"`
}

// defaultHints are given where the contract promises a way to recover without a human.
var defaultHints = map[int]string{
	http.StatusUnauthorized:        "Send the header `Authorization: Bearer sk-svc_...` with a live key of your workspace. An operator creates one with `switchboard keys create --workspace NAME`.",
	http.StatusTooManyRequests:     "Wait the number of seconds in the Retry-After header, then retry; spread requests out or ask for a larger budget (RATE_LIMIT_KEY_RPM, RATE_LIMIT_WORKSPACE_RPM).",
	http.StatusInternalServerError: "Retry with exponential backoff. If it keeps failing, report the X-Request-Id header of the response to the operator.",
	http.StatusServiceUnavailable:  "Retry after the number of seconds in the Retry-After header; the request was not carried out.",
}

func (s *Server) envelopeFor(e *apierr.Error) envelope {
	body := envelopeError{Message: e.Message, Type: e.Type(), Hint: e.Hint}
	if e.Param != "" {
		body.Param = &e.Param
	}
	if e.Code != "" {
		body.Code = &e.Code
	}
	status := e.Status()
	if _, ok := defaultHints[status]; ok {
		if body.Hint == "" {
			body.Hint = defaultHints[status]
		}
		body.DocsURL = s.cfg.PublicBaseURL + "/docs/errors#" + body.Type
	}
	return envelope{Error: body}
}

// handleError is echo's HTTPErrorHandler: it turns any error into the envelope. Errors that
// are not *apierr.Error become a generic 500; their details go to the log with the request id.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	if clientClosed(c, err) {
		_ = c.NoContent(statusClientClosedRequest)
		return
	}
	e := s.classify(err)
	if e.Status() >= 500 {
		s.log.ErrorContext(c.Request().Context(), "request failed",
			slog.String("request_id", requestID(c)), slog.String("error", err.Error()))
	}
	if e.Kind == apierr.KindRateLimited && c.Response().Header().Get("Retry-After") == "" {
		c.Response().Header().Set("Retry-After", "1")
	}
	if e.Kind == apierr.KindUnavailable {
		c.Response().Header().Set("Retry-After", RetryAfterUnavailable)
	}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(e.Status())
	} else {
		err = c.JSON(e.Status(), s.envelopeFor(e))
	}
	if err != nil {
		s.log.ErrorContext(c.Request().Context(), "write error response", slog.String("error", err.Error()))
	}
}

// statusClientClosedRequest is nginx's 499, "client closed request": the client hung up
// before its answer was written. Nobody can read an answer then, so none is written; the
// access log and the request metric say 499, not the 500 of a failure, and no error is logged
// (a load balancer's retries or a user closing a tab are not the server failing).
const statusClientClosedRequest = 499

// clientClosed tells a request that failed because its client went away: the request's
// context is canceled (net/http does that when the connection closes) and the error is that
// cancellation, not a failure of its own that happened meanwhile.
func clientClosed(c echo.Context, err error) bool {
	return errors.Is(c.Request().Context().Err(), context.Canceled) && errors.Is(err, context.Canceled)
}

// RetryAfterUnavailable is the Retry-After, in seconds, of a 503 database_unavailable: a
// replica is back within seconds of the database (the pool, the LISTEN connection and River
// reconnect on their own), so a client retries soon rather than late.
const RetryAfterUnavailable = "2"

func (s *Server) classify(err error) *apierr.Error {
	if e := bodyTimeout(err); e != nil {
		return e // a handler reading its body itself (an upload) met the body deadline
	}
	if e := store.Unavailability(err); e != nil {
		return e // PostgreSQL out of reach: a 503 to retry, whatever layer met it
	}
	if e := apierr.As(err); e != nil {
		if e.Kind == apierr.KindInternal {
			return apierr.Internal(e.Err)
		}
		return e
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if he.Code == http.StatusRequestEntityTooLarge {
			return s.tooLarge()
		}
		return fromHTTPError(he)
	}
	return apierr.Internal(err)
}

// tooLarge is the 413 of a body above the configured limit, which it names.
func (s *Server) tooLarge() *apierr.Error {
	return &apierr.Error{Kind: apierr.KindTooLarge, Code: "request_too_large",
		Message: "The request body is larger than the " + byteSize(s.cfg.BodyLimitBytes) + " limit."}
}

// byteSize writes a size as people read it: "1 MiB", "512 KiB", "1000 bytes".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// fromHTTPError maps echo's own errors (routing, body limit, binding) into the envelope.
func fromHTTPError(he *echo.HTTPError) *apierr.Error {
	switch he.Code {
	case http.StatusNotFound:
		return &apierr.Error{Kind: apierr.KindNotFound, Code: "unknown_route", Message: "Unknown route. See /llms.txt for the surfaces this server offers."}
	case http.StatusMethodNotAllowed:
		return &apierr.Error{Kind: apierr.KindMethodNotAllowed, Code: "method_not_allowed", Message: "This route does not accept that method."}
	case http.StatusUnsupportedMediaType:
		return apierr.Invalid("", "unsupported_media_type", "Send the body as application/json.")
	}
	if he.Code >= 400 && he.Code < 500 {
		// The generated wrappers bind path and query parameters after validation and say
		// "Invalid format for parameter id: ..." when a value cannot be parsed (a UUID).
		msg := fmt.Sprint(he.Message)
		if rest, ok := strings.CutPrefix(msg, "Invalid format for parameter "); ok {
			name, _, _ := strings.Cut(rest, ":")
			return apierr.Invalid(name, "invalid_parameter", "%s has an invalid format.", name)
		}
		return apierr.Invalid("", "", "%s", msg)
	}
	return apierr.Internal(he)
}

// validationError turns a kin-openapi request validation failure into a 400 naming the
// offending field. A schema may carry `x-error-code` to give its failures a stable code
// (the model enum uses it for `model_not_found`).
func validationError(c echo.Context, he *echo.HTTPError) error {
	if he.Code != http.StatusBadRequest {
		return fromHTTPError(he)
	}
	// Only a network failure here: an unexpected EOF in the validator is JSON cut short,
	// which is invalid_json below.
	var netErr net.Error
	if errors.As(he.Internal, &netErr) {
		return unreadBody(he.Internal)
	}
	cause := he.Internal
	var reqErr *openapi3filter.RequestError
	if errors.As(he.Internal, &reqErr) {
		cause = reqErr.Err
		if reqErr.Parameter != nil {
			msg := describe(reqErr.Err, reqErr.Reason)
			if se, reason := firstSchemaError(reqErr.Err); se != nil {
				msg = reason
			}
			return apierr.Invalid(reqErr.Parameter.Name, "invalid_parameter", "%s", msg)
		}
	}
	if se, reason := firstSchemaError(cause); se != nil {
		code := "invalid_value"
		if v, ok := se.Schema.Extensions["x-error-code"].(string); ok {
			code = v
		}
		if code == "model_not_found" {
			reason = fmt.Sprintf("The model %v does not exist or is not offered here. GET /v1/models lists the models you can use.", se.Value)
		}
		return apierr.Invalid(schemaErrorParam(se), code, "%s", reason)
	}
	var parseErr *openapi3filter.ParseError
	if errors.As(cause, &parseErr) {
		return apierr.Invalid("", "invalid_json", "The request body is not valid JSON: %s", describe(parseErr.Cause, parseErr.Reason))
	}
	if reqErr != nil {
		return apierr.Invalid("", "invalid_request", "%s", describe(reqErr.Err, reqErr.Reason))
	}
	return apierr.Invalid("", "invalid_request", "%v", he.Message)
}

// unreadBody is the 400 of a body that could not be read: the client stopped sending it, or
// did not send it in time. Its message never carries the read error, which names this
// server's and the client's addresses and ports.
func unreadBody(err error) *apierr.Error {
	if e := bodyTimeout(err); e != nil {
		return e
	}
	return &apierr.Error{Kind: apierr.KindInvalid, Code: "body_not_received", Err: err,
		Message: "The request body was not received completely; send the whole body without pausing."}
}

// bodyTimeout is the 408 of a body that did not arrive within REQUEST_BODY_TIMEOUT
// (httpdeadline cut it off); nil for any other error. The connection is closed after the
// answer, so a client cannot go on trickling.
func bodyTimeout(err error) *apierr.Error {
	var te *httpdeadline.BodyTimeoutError
	if !errors.As(err, &te) {
		return nil
	}
	return &apierr.Error{Kind: apierr.KindTimeout, Code: "request_timeout", Err: err,
		Message: "The request body did not arrive within " + te.Limit.String() + "; send the whole body without pausing."}
}

// readBody reads a request body for a middleware that needs it whole: the body limit's
// error passes through (the 413); a connection that failed or a body shorter than its
// Content-Length is unreadBody's 400.
func readBody(body io.Reader) ([]byte, error) {
	raw, err := io.ReadAll(body)
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, unreadBody(err)
	}
	return raw, err
}

// firstSchemaError finds the schema error in err and a one-line reason for it. A value that
// matches none of the alternatives of a oneOf comes as several errors at the same place; their
// reasons are joined ("value must be a string, or value must be an array").
func firstSchemaError(err error) (*openapi3.SchemaError, string) {
	var multi openapi3.MultiError
	if errors.As(err, &multi) {
		var first *openapi3.SchemaError
		var reasons []string
		for _, e := range multi {
			if se, _ := firstSchemaError(e); se != nil {
				if first == nil {
					first = se
				}
				reasons = append(reasons, se.Reason)
			}
		}
		return first, strings.Join(reasons, ", or ")
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		return se, se.Reason
	}
	return nil, ""
}

// schemaErrorParam renders the JSON pointer of a schema error as a dotted path
// (`messages[0].role`). For an unknown property the path names the property itself.
func schemaErrorParam(e *openapi3.SchemaError) string {
	ptr := e.JSONPointer()
	if strings.HasSuffix(e.Reason, " is unsupported") {
		if name := quotedName(e.Reason); name != "" {
			ptr = append(ptr, name)
		}
	}
	var b strings.Builder
	for _, p := range ptr {
		if isIndex(p) {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func quotedName(reason string) string {
	_, rest, ok := strings.Cut(reason, `"`)
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, `"`)
	if !ok {
		return ""
	}
	return name
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func describe(err error, reason string) string {
	if err != nil {
		return err.Error()
	}
	return reason
}
