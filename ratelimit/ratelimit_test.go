package ratelimit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestBudgetIsSpentThenRefillsContinuously(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{t: time.Unix(1000, 0)}
	m := NewMemory(c.now)

	for i := 0; i < 3; i++ {
		r, err := m.Take(ctx, "k", 3)
		require.NoError(t, err)
		require.True(t, r.Allowed)
		require.Equal(t, 3, r.Limit)
		require.Equal(t, 2-i, r.Remaining)
	}
	r, _ := m.Take(ctx, "k", 3)
	require.False(t, r.Allowed)
	require.Equal(t, 0, r.Remaining)
	require.Equal(t, 20*time.Second, r.RetryAfter, "3 per minute refills one every 20s")
	require.Equal(t, time.Minute, r.Reset)

	c.advance(20 * time.Second)
	r, _ = m.Take(ctx, "k", 3)
	require.True(t, r.Allowed)

	other, _ := m.Take(ctx, "other", 3)
	require.True(t, other.Allowed, "buckets are independent")
	require.Equal(t, 2, other.Remaining)
}

func TestIdleBucketsAreForgottenWithoutChangingAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{t: time.Unix(1000, 0)}
	m := NewMemory(c.now)
	_, _ = m.Take(ctx, "idle", 1)
	c.advance(2 * time.Minute)
	for i := 0; i < 5000; i++ {
		_, _ = m.Take(ctx, "busy", 1_000_000)
	}
	total := 0
	for i := range m.shards {
		total += len(m.shards[i].buckets)
	}
	require.LessOrEqual(t, total, 2)
	r, _ := m.Take(ctx, "idle", 1)
	require.True(t, r.Allowed)
}

func TestConcurrentTakesNeverOverspend(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	m := NewMemory(c.now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := m.Take(context.Background(), "shared", 20)
			if r.Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 20, allowed)
}
