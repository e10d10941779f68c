package server

import (
	"encoding/json"
	"net/http"
)

// sseWriter writes Server-Sent Events frames and flushes each one, so a delta reaches the
// client as soon as the model produced it. Headers are sent with the first frame: until then
// a failure can still become an ordinary error response.
type sseWriter struct {
	w       http.ResponseWriter
	started bool
}

func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // proxies must not buffer the stream
	s.w.WriteHeader(http.StatusOK)
	// Send the headers now: a client of a quiet feed must not wait for the first event.
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// event writes `event: name` (when name is not empty) and `data: <json>`.
func (s *sseWriter) event(name string, data any) error {
	body, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return s.raw(name, body)
}

func (s *sseWriter) raw(name string, data []byte) error {
	s.start()
	buf := make([]byte, 0, len(data)+len(name)+16)
	if name != "" {
		buf = append(append(append(buf, "event: "...), name...), '\n')
	}
	buf = append(append(append(buf, "data: "...), data...), "\n\n"...)
	return s.write(buf)
}

// frame writes a full event: `id:`, `event:` and `data:` lines.
func (s *sseWriter) frame(id, name string, data []byte) error {
	s.start()
	buf := make([]byte, 0, len(data)+len(name)+len(id)+24)
	buf = append(append(append(buf, "id: "...), id...), '\n')
	buf = append(append(append(buf, "event: "...), name...), '\n')
	buf = append(append(append(buf, "data: "...), data...), "\n\n"...)
	return s.write(buf)
}

// comment writes a `:text` line, which clients ignore; it keeps idle connections open.
func (s *sseWriter) comment(text string) error {
	s.start()
	return s.write([]byte(":" + text + "\n\n"))
}

func (s *sseWriter) write(buf []byte) error {
	if _, err := s.w.Write(buf); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}
