package channels

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBatcherCommitsWhatQueuedMeanwhileTogether: an item alone commits at once; items that
// arrive while a batch commits wait and are committed together by the next, each getting its
// own outcome.
func TestBatcherCommitsWhatQueuedMeanwhileTogether(t *testing.T) {
	var b batcher[int]
	var mu sync.Mutex
	var batches [][]int
	release := make(chan struct{})
	first := true
	commit := func(batch []*batched[int]) {
		var vs []int
		for _, f := range batch {
			vs = append(vs, f.v)
		}
		mu.Lock()
		batches = append(batches, vs)
		wait := first
		first = false
		mu.Unlock()
		if wait {
			<-release // the first batch commits slowly
		}
		for _, f := range batch {
			if f.v == 3 {
				f.finish(errors.New("three fails"))
			} else {
				f.finish(nil)
			}
		}
	}
	errs := make(chan error, 4)
	go func() { errs <- b.do(0, commit) }()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(batches) == 1 }, 5*time.Second, time.Millisecond)
	for v := 1; v <= 3; v++ {
		go func() { errs <- b.do(v, commit) }()
	}
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 3 }, 5*time.Second, time.Millisecond)
	close(release)
	var failed int
	for range 4 {
		if err := <-errs; err != nil {
			failed++
		}
	}
	require.Equal(t, 1, failed, "each item gets its own outcome")
	require.Len(t, batches, 2, "the three that queued meanwhile are one batch")
	require.ElementsMatch(t, []int{1, 2, 3}, batches[1])
}
