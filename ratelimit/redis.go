package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// takeScript is the token bucket of Memory.Take, run atomically in Redis so that every replica
// spends from one bucket. The clock is Redis's (TIME), not the replicas': their clocks may
// disagree, Redis's is one. A bucket is a hash {t: tokens, l: last refill in microseconds}
// that expires once it would be full again, exactly like Memory's sweep.
// KEYS[1] the bucket, ARGV[1] the budget per minute. Returns {allowed, tokens-after}.
var takeScript = redis.NewScript(`
local capacity = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = capacity / 60000000
local h = redis.call('HMGET', KEYS[1], 't', 'l')
local tokens = tonumber(h[1])
local last = tonumber(h[2])
if tokens == nil or last == nil then
	tokens = capacity
	last = now
end
tokens = math.min(capacity, tokens + math.max(0, now - last) * rate)
local allowed = 0
if tokens >= 1 then
	tokens = tokens - 1
	allowed = 1
end
redis.call('HSET', KEYS[1], 't', string.format('%.6f', tokens), 'l', string.format('%d', now))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate / 1000) + 1000)
return {allowed, string.format('%.6f', tokens)}
`)

// RedisKeyPrefix namespaces the buckets in a Redis shared with other applications.
const RedisKeyPrefix = "switchboard:ratelimit:"

// Redis is a Limiter shared by every replica that uses the same Redis: one budget, however
// many processes serve it. It has the semantics of Memory (a continuously refilling token
// bucket of perMinute requests), so the rate-limit headers do not change.
//
// It fails open: when Redis does not answer, the request is decided by Fallback (an
// in-process limiter: each replica then counts its own share again, as without Redis), the
// error is logged (at most once per FailOpenLogEvery) and counted (FailOpens), and Redis is
// left alone for RetryAfterFailure so that a dead Redis does not add a time-out to every
// request. Take never returns an error.
type Redis struct {
	client   redis.UniversalClient
	fallback Limiter
	log      *slog.Logger

	// RetryAfterFailure is how long Redis is skipped after a failed call.
	RetryAfterFailure time.Duration
	// FailOpenLogEvery bounds the warnings of an outage to one per interval.
	FailOpenLogEvery time.Duration

	failOpens atomic.Uint64
	mu        sync.Mutex
	skipUntil time.Time
	lastLog   time.Time
}

// NewRedis returns a limiter over client, deciding with fallback when Redis fails.
func NewRedis(client redis.UniversalClient, fallback Limiter, log *slog.Logger) *Redis {
	return &Redis{client: client, fallback: fallback, log: log, RetryAfterFailure: time.Second, FailOpenLogEvery: 10 * time.Second}
}

// NewRedisClient opens a client for a REDIS_URL (redis://[user:password@]host:port[/db] or
// rediss://) with short time-outs: a rate-limit decision that waits seconds for Redis is worse
// than one taken in-process.
func NewRedisClient(url string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	opts.DialTimeout = 250 * time.Millisecond
	opts.ReadTimeout = 250 * time.Millisecond
	opts.WriteTimeout = 250 * time.Millisecond
	opts.MaxRetries = 1
	return redis.NewClient(opts), nil
}

// FailOpens is how many decisions were taken in-process because Redis failed.
func (r *Redis) FailOpens() uint64 { return r.failOpens.Load() }

// Take implements Limiter.
func (r *Redis) Take(ctx context.Context, key string, perMinute int) (Result, error) {
	if perMinute < 1 {
		perMinute = 1
	}
	if !r.skipping() {
		res, err := r.take(ctx, key, perMinute)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			// The request is gone; its decision no longer matters and Redis is not at fault.
			return r.fallback.Take(ctx, key, perMinute)
		}
		r.failed(err)
	}
	r.failOpens.Add(1)
	return r.fallback.Take(ctx, key, perMinute)
}

func (r *Redis) take(ctx context.Context, key string, perMinute int) (Result, error) {
	v, err := takeScript.Run(ctx, r.client, []string{RedisKeyPrefix + key}, perMinute).Slice()
	if err != nil {
		return Result{}, err
	}
	if len(v) != 2 {
		return Result{}, fmt.Errorf("ratelimit: unexpected script answer %v", v)
	}
	allowed, _ := v[0].(int64)
	s, _ := v[1].(string)
	tokens, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: unexpected tokens %q", s)
	}
	return result(perMinute, allowed == 1, tokens), nil
}

// result is the Result of a bucket holding tokens after a Take, as Memory computes it.
func result(perMinute int, allowed bool, tokens float64) Result {
	perSecond := float64(perMinute) / 60
	res := Result{Limit: perMinute, Allowed: allowed}
	if !allowed {
		res.RetryAfter = seconds((1 - tokens) / perSecond)
	}
	res.Remaining = int(math.Floor(tokens))
	res.Reset = seconds((float64(perMinute) - tokens) / perSecond)
	return res
}

func (r *Redis) skipping() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Now().Before(r.skipUntil)
}

func (r *Redis) failed(err error) {
	r.mu.Lock()
	now := time.Now()
	r.skipUntil = now.Add(r.RetryAfterFailure)
	logIt := now.Sub(r.lastLog) >= r.FailOpenLogEvery
	if logIt {
		r.lastLog = now
	}
	r.mu.Unlock()
	if logIt {
		r.log.Warn("rate limits: Redis failed; deciding in-process (fail open) until it answers again",
			slog.String("error", err.Error()), slog.Uint64("fail_opens", r.failOpens.Load()))
	}
}

// Ping reports whether Redis answers, for the readiness check.
func (r *Redis) Ping(ctx context.Context) error { return r.client.Ping(ctx).Err() }
