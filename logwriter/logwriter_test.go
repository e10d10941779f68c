package logwriter

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lockedBuffer is an output that records its writes.
type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	gate   chan struct{} // when set, each write waits for it to close
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	if b.gate != nil {
		<-b.gate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLinesArriveWholeAndInOrder: lines written from many goroutines all reach the output
// by Close, none torn, each goroutine's in the order it wrote them; the caller's buffer may
// be reused as soon as Write returns.
func TestLinesArriveWholeAndInOrder(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	w := New(out)
	const writers, lines = 8, 2000
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 64)
			for i := range lines {
				buf = fmt.Appendf(buf[:0], "writer %d line %d\n", g, i)
				n, err := w.Write(buf)
				require.NoError(t, err)
				require.Equal(t, len(buf), n)
				copy(buf, "XXXXXXXX") // reused at once, as slog's handlers do
			}
		}()
	}
	wg.Wait()
	require.NoError(t, w.Close())
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, got, writers*lines)
	next := make([]int, writers)
	for _, line := range got {
		var g, i int
		_, err := fmt.Sscanf(line, "writer %d line %d", &g, &i)
		require.NoError(t, err, line)
		require.Equal(t, next[g], i, "writer %d's lines in order", g)
		next[g]++
	}
	require.Less(t, out.writes, writers*lines, "lines that queued together went out together")
}

// TestWriteAfterCloseGoesThrough: after Close nothing is queued any more.
func TestWriteAfterCloseGoesThrough(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	w := New(out)
	_, _ = w.Write([]byte("before\n"))
	require.NoError(t, w.Close())
	_, _ = w.Write([]byte("after\n"))
	require.Equal(t, "before\nafter\n", out.String())
}

// TestASlowOutputHoldsTheWriters: when the output is slower than the logging, at most
// maxQueued bytes wait and the writers wait for room; once the output moves, everything
// arrives, in order.
func TestASlowOutputHoldsTheWriters(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{gate: make(chan struct{})}
	w := New(out)
	line := []byte(strings.Repeat("x", 1023) + "\n")
	const total = 3 * maxQueued / 1024
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for range total {
			_, _ = w.Write(line)
		}
	}()
	full := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		require.LessOrEqual(t, len(w.queued), maxQueued+len(line), "what waits stays bounded")
		return len(w.queued) >= maxQueued
	}
	require.Eventually(t, full, 20*time.Second, time.Millisecond, "the queue fills while the output is stuck")
	select {
	case <-finished:
		t.Fatal("the writer went on past a full queue")
	default:
	}
	close(out.gate)
	<-finished
	require.NoError(t, w.Close())
	require.Equal(t, strings.Repeat(string(line), total), out.String())
}
