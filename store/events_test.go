package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestCursorsBecomeVisibleInOrder: many writers append events while a reader polls with
// its cursor. If cursor N+1 could commit (become visible) before cursor N, the reader would
// see a gap, advance past N, and never see N: the reader checks that every poll continues
// exactly where the previous one ended.
func TestCursorsBecomeVisibleInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)

	const writers, perWriter = 8, 40
	var wg sync.WaitGroup
	var done atomic.Bool
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < perWriter; j++ {
				err := s.InTx(ctx, func(tx *store.Tx) error {
					_, err := tx.AppendEvents(ctx, w.ID, []store.NewEvent{{Type: "turn.completed", Data: map[string]int{"j": j}}})
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); done.Store(true) }()

	var cursor int64
	for polls := 0; ; polls++ {
		finished := done.Load()
		page, err := s.EventsAfter(ctx, w.ID, cursor, 1000)
		require.NoError(t, err)
		for _, e := range page {
			require.Equal(t, cursor+1, e.Seq, "after cursor %d the next visible event must be %d", cursor, cursor+1)
			cursor = e.Seq
		}
		if finished && len(page) == 0 {
			break
		}
	}
	require.Equal(t, int64(writers*perWriter), cursor)
}
