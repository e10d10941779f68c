// Package ratelimit holds request budgets. A budget is a token bucket of N requests per minute
// that refills continuously, so a client is never punished by a window boundary. The Limiter
// interface lets a shared store (Redis, PostgreSQL) replace the in-process Memory limiter when
// replicas must share budgets.
package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"
)

// Result is the state of one bucket after a Take.
type Result struct {
	Allowed    bool
	Limit      int           // requests per minute
	Remaining  int           // whole requests left now
	Reset      time.Duration // until the bucket is full again
	RetryAfter time.Duration // until one request is allowed; zero when Allowed
}

// Limiter takes one request from the bucket named key, whose budget is perMinute.
type Limiter interface {
	Take(ctx context.Context, key string, perMinute int) (Result, error)
}

// Memory is an in-process Limiter. It is safe for concurrent use.
type Memory struct {
	now    func() time.Time
	shards [64]shard
}

type shard struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	takes   int
}

type bucket struct {
	tokens float64
	last   time.Time
}

// NewMemory returns an in-process limiter; now is the clock (time.Now when nil).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	m := &Memory{now: now}
	for i := range m.shards {
		m.shards[i].buckets = map[string]*bucket{}
	}
	return m
}

// Take implements Limiter.
func (m *Memory) Take(_ context.Context, key string, perMinute int) (Result, error) {
	if perMinute < 1 {
		perMinute = 1
	}
	now := m.now()
	s := &m.shards[fnv32(key)%uint32(len(m.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(now)

	capacity := float64(perMinute)
	perSecond := capacity / 60
	b, ok := s.buckets[key]
	if !ok {
		b = &bucket{tokens: capacity, last: now}
		s.buckets[key] = b
	}
	b.tokens = math.Min(capacity, b.tokens+now.Sub(b.last).Seconds()*perSecond)
	b.last = now

	res := Result{Limit: perMinute}
	if b.tokens >= 1 {
		b.tokens--
		res.Allowed = true
	} else {
		res.RetryAfter = seconds((1 - b.tokens) / perSecond)
	}
	res.Remaining = int(math.Floor(b.tokens))
	res.Reset = seconds((capacity - b.tokens) / perSecond)
	return res, nil
}

// sweep drops buckets idle for over a minute every few thousand takes: such a bucket is full
// again, exactly like a fresh one, so forgetting it changes nothing but memory.
func (s *shard) sweep(now time.Time) {
	s.takes++
	if s.takes < 4096 {
		return
	}
	s.takes = 0
	for k, b := range s.buckets {
		if now.Sub(b.last) > time.Minute {
			delete(s.buckets, k)
		}
	}
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
