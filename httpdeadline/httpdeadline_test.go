package httpdeadline

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// short limits, so the tests need not wait long; no test asserts how long anything took.
var short = Config{ReadHeader: time.Second, Body: 50 * time.Millisecond, Write: 50 * time.Millisecond, StreamWrite: time.Second, Idle: time.Second}

// serve runs NewServer(h, cfg) on a loopback port and returns its address.
func serve(t *testing.T, h http.Handler, cfg Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := NewServer("", h, cfg)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// requireClosedByServer reads conn to its end and fails if the server did not end it
// (the test's own deadline, far beyond the server's limits, is only a safety net).
func requireClosedByServer(t *testing.T, conn net.Conn) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open: %v", err)
	}
}

// TestTrickledBodyIsCutOff: a client that sends headers and then trickles its body (here:
// one byte of a hundred, then nothing) is cut off after the body time-out.
func TestTrickledBodyIsCutOff(t *testing.T) {
	t.Parallel()
	readErr := make(chan error, 2)
	addr := serve(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	}), Config{Body: 50 * time.Millisecond, ReadHeader: time.Minute, Idle: time.Minute}) // longer than the test waits
	for _, head := range []string{
		"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
		"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n",
	} {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = io.WriteString(conn, head)
		require.NoError(t, err)
		requireClosedByServer(t, conn)
		conn.Close()
		err = <-readErr
		var te *BodyTimeoutError
		require.ErrorAs(t, err, &te, "the handler's read failed with the body time-out")
		require.Equal(t, 50*time.Millisecond, te.Limit)
		var ne net.Error
		require.ErrorAs(t, err, &ne, "still a net.Error")
		require.True(t, ne.Timeout())
	}
}

// TestIdleConnectionIsClosed: a kept-alive connection without a next request is closed.
func TestIdleConnectionIsClosed(t *testing.T) {
	t.Parallel()
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }), short)
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	requireClosedByServer(t, conn)
}

// TestSlowHandlerIsNotCut: a handler that works longer than the body and write time-outs
// after reading its body (a non-streamed completion waiting for its model) keeps its
// context and delivers its answer. http.Server's ReadTimeout and WriteTimeout of the same
// values would cancel the context and lose the answer.
func TestSlowHandlerIsNotCut(t *testing.T) {
	t.Parallel()
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(6 * short.Body):
		}
		_, _ = fmt.Fprintf(w, "answer to %s", body)
	}), short)
	resp, err := http.Post("http://"+addr+"/", "text/plain", strings.NewReader("question"))
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "answer to question", string(got))
}

// TestEventStreamIsNotCut: an event stream lasting many times the write time-out (and the
// body time-out, for a stream that answers a POST) is delivered whole.
func TestEventStreamIsNotCut(t *testing.T) {
	t.Parallel()
	const frames = 12
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i := range frames {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(short.Write / 2):
			}
			if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
				return
			}
			http.NewResponseController(w).Flush() //nolint:errcheck // a failed write ends the stream above
		}
	}), short)
	for _, do := range []func() (*http.Response, error){
		func() (*http.Response, error) { return http.Get("http://" + addr + "/v1/events") },
		func() (*http.Response, error) {
			return http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
		},
	} {
		resp, err := do()
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, frames, strings.Count(string(got), "data: "), "every frame arrived: %q", got)
	}
}

// TestWriterKeepsTheControllerReachable: handlers and echo reach flushing and deadlines
// through http.ResponseController, which must see through the wrapper.
func TestWriterKeepsTheControllerReachable(t *testing.T) {
	t.Parallel()
	errs := make(chan error, 1)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rc := http.NewResponseController(w)
		errs <- errors.Join(rc.SetWriteDeadline(time.Now().Add(time.Minute)), rc.SetReadDeadline(time.Time{}), rc.Flush())
		_, ok := w.(http.Flusher)
		require.True(t, ok)
	}), short)
	resp, err := http.Get("http://" + addr + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, <-errs)
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, Default, Config{}.withDefaults())
	srv := NewServer(":0", http.NotFoundHandler(), Config{})
	require.Equal(t, Default.ReadHeader, srv.ReadHeaderTimeout)
	require.Equal(t, Default.Idle, srv.IdleTimeout)
	require.Zero(t, srv.ReadTimeout, "per request, by Handler")
	require.Zero(t, srv.WriteTimeout, "per request, by Handler")
}

// TestStreamToAClientThatStopsReadingEnds: a stream whose client takes nothing (the
// connection open, the data unread) fails its write after StreamWrite instead of holding
// the handler forever.
func TestStreamToAClientThatStopsReadingEnds(t *testing.T) {
	t.Parallel()
	writeErr := make(chan error, 1)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		frame := []byte("data: " + strings.Repeat("x", 64<<10) + "\n\n")
		for {
			_, err := w.Write(frame)
			if err == nil {
				err = http.NewResponseController(w).Flush()
			}
			if err != nil {
				writeErr <- err
				return
			}
		}
	}), Config{StreamWrite: 50 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET /v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	select {
	case err := <-writeErr:
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		require.True(t, ne.Timeout(), "%v", err)
	case <-time.After(10 * time.Second): // a safety net only
		t.Fatal("the stream is still writing to a client that reads nothing")
	}
}

// TestLongEventStreamMovesItsDeadline: a stream that writes often lasts six times its
// StreamWrite and is delivered whole: its deadline keeps moving ahead of its writes (in steps,
// not on every write).
func TestLongEventStreamMovesItsDeadline(t *testing.T) {
	t.Parallel()
	const frames = 30
	cfg := Config{StreamWrite: 100 * time.Millisecond}
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for i := range frames {
			time.Sleep(cfg.StreamWrite / 5)
			if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
				return
			}
			if http.NewResponseController(w).Flush() != nil {
				return
			}
		}
	}), cfg)
	resp, err := http.Get("http://" + addr + "/v1/events")
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, frames, strings.Count(string(got), "data: "), "every frame arrived: %q", got)
}
