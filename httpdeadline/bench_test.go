package httpdeadline

import (
	"bufio"
	"net"
	"net/http"
	"testing"
)

// BenchmarkStreamFrame is the server's cost of one event-stream frame through Handler: a
// Write and a Flush to a real TCP connection whose client reads everything.
func BenchmarkStreamFrame(b *testing.B) {
	frame := []byte("id: 12345\nevent: turn.completed\ndata: {\"type\":\"turn.completed\",\"conversation_id\":\"mc-0123456789\"}\n\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	srv := NewServer("", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		b.ResetTimer()
		for range b.N {
			if _, err := w.Write(frame); err != nil {
				b.Error(err)
				return
			}
			if err := rc.Flush(); err != nil {
				b.Error(err)
				return
			}
		}
		b.StopTimer()
	}), Config{})
	go srv.Serve(ln) //nolint:errcheck // closed below
	defer srv.Close()
	resp, err := http.Get("http://" + ln.Addr().String() + "/v1/events")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 1<<16)
	go func() {
		for {
			if _, err := r.Discard(1 << 16); err != nil {
				return
			}
		}
	}()
	<-done
}
