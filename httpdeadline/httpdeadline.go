// Package httpdeadline bounds how long a client may hold a connection of the HTTP server:
// sending a request (headers, then body), receiving a response, and idling between requests,
// without cutting the server-sent event streams (/v1/events, streamed responses and chat
// completions, MCP's streamable HTTP), which stay open as long as their client reads them.
//
// http.Server's own ReadTimeout and WriteTimeout do not fit a server with streams and long
// model calls: both are measured from the start of the request, so they would cut a stream,
// and a ReadTimeout that passes while a handler is still working also cancels the request's
// context (net/http's background read fails), which would abort a non-streamed completion
// waiting minutes for its model. This package sets the same connection deadlines per request,
// through http.ResponseController, each where it belongs:
//
//   - the body must arrive within Config.Body of the end of the headers (the deadline is
//     lifted as soon as the body has been read, so it never cancels a handler's work);
//   - a response that is not an event stream must be delivered within Config.Write of its
//     first byte (the time a handler takes before answering is bounded by its own time-outs:
//     the vendor's, the database's);
//   - an event stream (Content-Type text/event-stream) has no overall deadline; each of its
//     writes must be taken by the client within Config.StreamWrite (at least 7/8 of it: the
//     deadline moves in steps, see writer), so a client that stops
//     reading cannot hold the stream's goroutine forever. Streams send their own keep-alive
//     comments (SSE_PING_INTERVAL), so a stream is never idle for long.
//
// No handler needs to do anything: the stream is recognized by its Content-Type when its
// headers are written.
package httpdeadline

import (
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"time"
)

// Config holds the limits. Zero values are replaced by Default's.
type Config struct {
	// ReadHeader bounds reading a request's headers (http.Server.ReadHeaderTimeout).
	ReadHeader time.Duration
	// Body bounds reading a request's body, from the end of its headers.
	Body time.Duration
	// Write bounds writing a response that is not an event stream, from its first byte.
	Write time.Duration
	// StreamWrite bounds each write of an event stream.
	StreamWrite time.Duration
	// Idle bounds the wait for the next request on a kept-alive connection
	// (http.Server.IdleTimeout).
	Idle time.Duration
}

// Default is what `switchboard serve` uses. Request bodies are at most 1 MiB (the server's
// body limit): 30 s accepts them from a client sending 35 KB/s, far slower than any real
// caller. Responses that are not streams are small (a page of a list, one completion): 60 s
// to deliver one is generous. A stream's frame is a few KB: a client that takes none of it
// in 30 s has stopped reading. Kept-alive connections are dropped after 120 s idle, longer
// than the 60 s idle time-out of common load balancers (which must be the ones to close
// first, or they may send a request on a connection the server is closing).
var Default = Config{ReadHeader: 10 * time.Second, Body: 30 * time.Second, Write: 60 * time.Second, StreamWrite: 30 * time.Second, Idle: 120 * time.Second}

func (c Config) withDefaults() Config {
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	return Config{
		ReadHeader:  pick(c.ReadHeader, Default.ReadHeader),
		Body:        pick(c.Body, Default.Body),
		Write:       pick(c.Write, Default.Write),
		StreamWrite: pick(c.StreamWrite, Default.StreamWrite),
		Idle:        pick(c.Idle, Default.Idle),
	}
}

// NewServer returns an http.Server for h with the header and idle time-outs set and h
// wrapped in Handler. ReadTimeout and WriteTimeout stay zero on purpose (see the package
// comment).
func NewServer(addr string, h http.Handler, cfg Config) *http.Server {
	cfg = cfg.withDefaults()
	return &http.Server{Addr: addr, Handler: Handler(h, cfg), ReadHeaderTimeout: cfg.ReadHeader, IdleTimeout: cfg.Idle}
}

// Handler sets the body, write and stream-write deadlines of each request of h. It must be
// the outermost handler, on the connection's own ResponseWriter.
func Handler(h http.Handler, cfg Config) http.Handler {
	cfg = cfg.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// A kept-alive connection still carries the write deadline of its previous response.
		_ = rc.SetWriteDeadline(time.Time{})
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			_ = rc.SetReadDeadline(time.Now().Add(cfg.Body))
			r.Body = &body{ReadCloser: r.Body, rc: rc, header: w.Header(), limit: cfg.Body}
		}
		h.ServeHTTP(&writer{ResponseWriter: w, rc: rc, cfg: cfg}, r)
	})
}

// body lifts the read deadline once the body has been read: net/http then reads the
// connection in the background to notice a client leaving, and a deadline passing there
// would cancel the request's context. A body that fails to arrive closes the connection
// after the answer: otherwise net/http would keep it for another request, and the client
// could go on trickling.
type body struct {
	io.ReadCloser
	rc     *http.ResponseController
	header http.Header
	limit  time.Duration
	done   bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case b.done || err == nil:
	case errors.Is(err, io.EOF):
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	default:
		b.done = true
		b.header.Set("Connection", "close")
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			err = &BodyTimeoutError{Limit: b.limit, Err: err}
		}
	}
	return n, err
}

// BodyTimeoutError is the error of reading a body that did not arrive within Config.Body.
// It is a net.Error (a time-out), so code that treats any network failure of a body alike
// keeps doing so; the server answers it with 408 (errors.As finds it through wrapping).
type BodyTimeoutError struct {
	Limit time.Duration // Config.Body
	Err   error         // the connection's own time-out
}

func (e *BodyTimeoutError) Error() string {
	return "request body not received within " + e.Limit.String() + ": " + e.Err.Error()
}

func (e *BodyTimeoutError) Unwrap() error { return e.Err }

// Timeout is true: net.Error.
func (e *BodyTimeoutError) Timeout() bool { return true }

// Temporary is false: net.Error (deprecated there, still part of the interface).
func (e *BodyTimeoutError) Temporary() bool { return false }

// writer sets the write deadline when the response starts, and keeps a stream's ahead of
// its writes. Moving a connection's deadline is not free (a runtime timer is reset, through
// the controller's chain of writers), and a stream writes and flushes every frame: so the
// deadline moves only once it is less than 7/8 of StreamWrite away (streamSlack). A write
// then always has between 7/8 of StreamWrite and StreamWrite to be taken.
type writer struct {
	http.ResponseWriter
	rc       *http.ResponseController
	cfg      Config
	started  bool
	stream   bool
	deadline time.Time // the stream's write deadline, as last set
}

// streamSlack is the share of StreamWrite a stream's deadline may be used up before it moves.
const streamSlack = 8

func (w *writer) WriteHeader(code int) {
	if !w.started && code >= 200 { // 1xx responses are informational: the real one follows
		w.started = true
		w.stream = isEventStream(w.Header().Get("Content-Type"))
		if w.stream {
			w.deadline = time.Now().Add(w.cfg.StreamWrite)
			_ = w.rc.SetWriteDeadline(w.deadline)
		} else {
			_ = w.rc.SetWriteDeadline(time.Now().Add(w.cfg.Write))
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(p []byte) (int, error) {
	w.beforeWrite()
	return w.ResponseWriter.Write(p)
}

// Flush sends what is buffered (SSE writers flush every frame).
func (w *writer) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting a failed write; http.ResponseController.Flush prefers it.
func (w *writer) FlushError() error {
	w.beforeWrite()
	return w.rc.Flush()
}

func (w *writer) beforeWrite() {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	} else if w.stream {
		if next := time.Now().Add(w.cfg.StreamWrite); next.Sub(w.deadline) >= w.cfg.StreamWrite/streamSlack {
			w.deadline = next
			_ = w.rc.SetWriteDeadline(next)
		}
	}
}

// Unwrap lets http.ResponseController reach the connection's writer (deadlines, hijacking).
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func isEventStream(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}
