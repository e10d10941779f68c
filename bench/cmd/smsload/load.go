package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"switchboard/sms/smstest"
)

// message is one inbound SMS of the run: its carrier id, sender and unique body.
type message struct {
	n              int
	sid, from      string
	body           string
	accepted       bool // some post of it was answered 200
	firstAccepted  bool
	acceptedBy     byte // the replica of the first 200
	firstAttemptAt time.Time
}

// attempt is one webhook post.
type attempt struct {
	msg     int
	kind    string // first, carrier_retry (the same MessageSid again), error_retry (to A after a refusal)
	replica byte   // 'a' or 'b'
	start   time.Time
	latency time.Duration
	status  int // 0: no answer
	err     string
	sched   time.Duration // how late the post left against its schedule
}

// Kinds of posts.
const (
	kindFirst        = "first"
	kindCarrierRetry = "carrier_retry"
	kindErrorRetry   = "error_retry"
)

type loadConfig struct {
	a, b, path, inboundURL, to, authToken string
	rate, senders                         int
	duration                              time.Duration
	retryFraction                         float64
	killPID                               int
	killAt, lbDelay                       time.Duration
	retryErrors                           bool
}

// loader sends the run's webhooks.
type loader struct {
	cfg    loadConfig
	client *http.Client
	msgs   []*message
	bOut   atomic.Bool // B is out of the "load balancer"

	mu       sync.Mutex
	attempts []attempt
	wg       sync.WaitGroup

	start, killedAt time.Time
	killErr         error
	beforeKill      func() // reads the CPU of B while it lives
}

func newLoader(cfg loadConfig) *loader {
	total := cfg.rate * int(cfg.duration/time.Second)
	l := &loader{cfg: cfg, msgs: make([]*message, total),
		// 15 s is how long the carrier waits for a webhook's answer.
		client: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxIdleConns: 1024}}}
	for i := range l.msgs {
		l.msgs[i] = &message{n: i, sid: smstest.NewSID("SM"), from: sender(i % cfg.senders), body: fmt.Sprintf("question %d", i)}
	}
	return l
}

// sender is the number of the i-th texter: +1 212 555 followed by four digits, and beyond
// 10,000 texters more digits of the exchange.
func sender(i int) string { return fmt.Sprintf("+1212%03d%04d", 555+i/10000, i%10000) }

// run posts rate webhooks a second for duration on a fixed schedule (open loop: a slow answer
// does not delay the next post), alternately to A and B; kills B at killAt; and waits for
// every post, retries included.
func (l *loader) run(ctx context.Context) {
	interval := time.Second / time.Duration(l.cfg.rate)
	l.start = time.Now()
	if l.cfg.killPID > 0 {
		t := time.AfterFunc(l.cfg.killAt, func() {
			if l.beforeKill != nil {
				l.beforeKill()
			}
			l.mu.Lock()
			l.killedAt = time.Now()
			l.killErr = syscall.Kill(l.cfg.killPID, syscall.SIGKILL)
			l.mu.Unlock()
			fmt.Fprintf(os.Stderr, "smsload: SIGKILL to replica B (pid %d) at %s: %v\n", l.cfg.killPID, time.Since(l.start).Round(time.Millisecond), l.killErr)
			// A load balancer takes B out once it notices; -lb-delay is how long that takes.
			time.AfterFunc(l.cfg.lbDelay, func() { l.bOut.Store(true) })
		})
		defer t.Stop()
	}
	next := 0
	for i, m := range l.msgs {
		due := l.start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		if i%l.cfg.rate == 0 {
			fmt.Fprintf(os.Stderr, "smsload: %ds, %d posted\n", i/l.cfg.rate, i)
		}
		replica := byte('a' + next%2)
		next++
		l.post(ctx, m, kindFirst, replica, due)
		if rand.Float64() < l.cfg.retryFraction {
			// The carrier posts the same MessageSid again (it timed out, or retries anyway),
			// 1 to 5 s later, to whichever replica the balancer picks.
			l.later(ctx, time.Second+rand.N(4*time.Second), m, kindCarrierRetry, 0)
		}
	}
	l.wg.Wait()
}

// later posts m after d; replica 0 is either (B only while it is in the balancer).
func (l *loader) later(ctx context.Context, d time.Duration, m *message, kind string, replica byte) {
	l.wg.Add(1)
	time.AfterFunc(d, func() {
		defer l.wg.Done()
		r := replica
		if r == 0 {
			r = byte('a' + rand.N(2))
		}
		l.post(ctx, m, kind, r, time.Now())
	})
}

// post sends one signed webhook of m, in its own goroutine.
func (l *loader) post(ctx context.Context, m *message, kind string, replica byte, due time.Time) {
	if replica == 'b' && l.bOut.Load() {
		replica = 'a'
	}
	base := l.cfg.a
	if replica == 'b' {
		base = l.cfg.b
	}
	form := smstest.InboundForm(m.from, l.cfg.to, m.body, m.sid)
	// Signed over the public inbound URL (A's), whichever replica it reaches.
	sig := smstest.SignWith(l.cfg.authToken, l.cfg.inboundURL, form)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		at := attempt{msg: m.n, kind: kind, replica: replica, start: time.Now()}
		at.sched = at.start.Sub(due)
		resp, err := smstest.PostWithSignature(ctx, l.client, base+l.cfg.path, form, sig)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			at.status = resp.StatusCode
		}
		at.latency = time.Since(at.start)
		if err != nil {
			at.err = err.Error()
		}
		l.mu.Lock()
		l.attempts = append(l.attempts, at)
		if kind == kindFirst {
			m.firstAttemptAt = at.start
		}
		if at.status == http.StatusOK && !m.accepted {
			m.accepted, m.acceptedBy, m.firstAccepted = true, replica, kind == kindFirst
		}
		l.mu.Unlock()
		// A post that got no answer or a 5xx is posted again to A, as the carrier retries
		// (or sends to its fallback URL) and the balancer has taken B out by then.
		if l.cfg.retryErrors && kind != kindErrorRetry && (err != nil || at.status >= 500) {
			l.later(ctx, time.Second, m, kindErrorRetry, 'a')
		}
	}()
}
