// Package logwriter takes the writing of log lines off the request path. Every request
// logs a line, and writing each line with its own write(2) to stderr was 2% of the server's
// CPU under load (docs/benchmarks.md, seventeenth pass). Write queues the line and returns;
// one goroutine writes whatever has queued meanwhile in one write: one line at a time when
// the server is quiet, hundreds under load.
//
// Lines reach the output in the order they were written. Nothing waits on a timer, so a line
// is out within microseconds; a process killed outright (SIGKILL, a crash of the runtime)
// loses only the lines queued in that instant. Close writes everything queued.
package logwriter

import (
	"io"
	"sync"
)

// maxQueued bounds what may wait: past it (the output is slower than the logging), Write
// waits for room, so memory stays bounded and logging slows down to what the output takes.
const maxQueued = 1 << 20

// Writer queues lines for one goroutine to write to its output.
type Writer struct {
	out io.Writer

	mu     sync.Mutex
	cond   sync.Cond // signalled when lines queue, room frees or Close is called
	queued []byte
	closed bool
	done   chan struct{} // closed when run has written everything and returned
}

// New starts a Writer to out. Close it before the process exits.
func New(out io.Writer) *Writer {
	w := &Writer{out: out, done: make(chan struct{})}
	w.cond.L = &w.mu
	go w.run()
	return w
}

// Write queues p and returns. It never fails: an output that fails loses those lines (a log
// cannot report its own failure anywhere better). After Close it writes through.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	for len(w.queued) >= maxQueued && !w.closed {
		w.cond.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		<-w.done // after what was queued
		return w.out.Write(p)
	}
	w.queued = append(w.queued, p...)
	w.cond.Broadcast()
	w.mu.Unlock()
	return len(p), nil
}

func (w *Writer) run() {
	defer close(w.done)
	var spare []byte
	for {
		w.mu.Lock()
		for len(w.queued) == 0 && !w.closed {
			w.cond.Wait()
		}
		if len(w.queued) == 0 { // closed and drained
			w.mu.Unlock()
			return
		}
		batch := w.queued
		w.queued = spare[:0]
		w.cond.Broadcast() // room for writers waiting on maxQueued
		w.mu.Unlock()

		_, _ = w.out.Write(batch)
		if cap(batch) <= 2*maxQueued {
			spare = batch
		}
	}
}

// Close writes every queued line and makes later writes go straight to the output.
func (w *Writer) Close() error {
	w.mu.Lock()
	w.closed = true
	w.cond.Broadcast()
	w.mu.Unlock()
	<-w.done
	return nil
}
