package ratelimit_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/ratelimit"
	"switchboard/ratelimit/redistest"
)

func newRedis(t *testing.T, url string) *ratelimit.Redis {
	t.Helper()
	client, err := ratelimit.NewRedisClient(url)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return ratelimit.NewRedis(client, ratelimit.NewMemory(nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func TestRedisBucketMatchesMemorySemantics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	r := newRedis(t, srv.URL)

	for i := 0; i < 3; i++ {
		res, err := r.Take(ctx, "k", 3)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		require.Equal(t, 3, res.Limit)
		require.Equal(t, 2-i, res.Remaining)
	}
	res, err := r.Take(ctx, "k", 3)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.Equal(t, 0, res.Remaining)
	// 3 per minute refill one every 20 s; a few microseconds have passed since the last take.
	require.InDelta(t, 20, res.RetryAfter.Seconds(), 1)
	require.InDelta(t, 60, res.Reset.Seconds(), 1)

	other, _ := r.Take(ctx, "other", 3)
	require.True(t, other.Allowed, "buckets are independent")
	require.Equal(t, 2, other.Remaining)
	require.Zero(t, r.FailOpens())
}

func TestRedisLimitersShareOneBudget(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a, b := newRedis(t, srv.URL), newRedis(t, srv.URL)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func(l *ratelimit.Redis) {
			defer wg.Done()
			res, err := l.Take(context.Background(), "shared", 20)
			require.NoError(t, err)
			if res.Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		}([]*ratelimit.Redis{a, b}[i%2])
	}
	wg.Wait()
	require.Equal(t, 20, allowed, "two limiters spend from one bucket")
}

func TestRedisFailsOpenToTheFallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	r := newRedis(t, srv.URL)
	_, err := r.Take(ctx, "k", 2)
	require.NoError(t, err)
	srv.Stop()

	res, err := r.Take(ctx, "k", 2)
	require.NoError(t, err, "a lost Redis is never an error")
	require.True(t, res.Allowed)
	require.Equal(t, 2, res.Limit)
	require.Equal(t, 1, res.Remaining, "the in-process bucket decides, from full")
	res, _ = r.Take(ctx, "k", 2)
	require.True(t, res.Allowed)
	res, _ = r.Take(ctx, "k", 2)
	require.False(t, res.Allowed, "the fallback still limits")
	require.EqualValues(t, 3, r.FailOpens())
}
