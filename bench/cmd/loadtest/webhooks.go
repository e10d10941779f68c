package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"switchboard/bench/benchkit"
)

type webhookResult struct {
	turns      *sample
	events     int64
	delivered  int
	rate       float64 // unique signed deliveries per second, first to last
	lag        *sample
	badSig     int
	dupes      int
	window     time.Duration
	generation time.Duration
}

// webhooks registers a receiver, runs `turns` ephemeral turns with `clients` clients (each
// turn commits two events), and measures the signed deliveries until every event arrived or
// the timeout.
func webhooks(serverURL, key string, turns, clients int, timeout time.Duration, turn target, eventCount func() (int64, error)) (webhookResult, error) {
	var res webhookResult
	rc := benchkit.NewReceiver()
	stop, err := rc.Listen(context.Background(), serverURL, key)
	if err != nil {
		return res, err
	}
	defer stop()

	// A closed loop of `clients` clients, stopped after exactly `turns` turns.
	atk := vegeta.NewAttacker(vegeta.Workers(uint64(clients)), vegeta.MaxWorkers(uint64(clients)),
		vegeta.Timeout(15*time.Second), vegeta.KeepAlive(true), vegeta.Connections(clients+16))
	res.turns = &sample{}
	begin := time.Now()
	for r := range atk.Attack(vegeta.NewStaticTargeter(turn.vegeta()), countPacer(turns), 10*time.Minute, "") {
		if r.Error != "" || r.Code != http.StatusOK {
			res.turns.fail(fmt.Sprintf("status %d %s", r.Code, r.Error))
		} else {
			res.turns.add(r.Latency)
		}
	}
	res.generation = time.Since(begin)
	res.turns.elapsed = res.generation
	res.turns.finish()
	// Ephemeral turns' events are written behind the answers, so the cursor read at once can
	// be short of what the deliveries will bring (a run printed "148/124 delivered").
	if res.events, err = settledCount(eventCount, 500*time.Millisecond, timeout); err != nil {
		return res, err
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for rc.Count() < int(res.events) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	st := rc.Stats()
	res.delivered = st.Delivered
	res.window = st.Last.Sub(st.First)
	if res.window > 0 {
		res.rate = float64(res.delivered) / res.window.Seconds()
	}
	res.lag = &sample{}
	for _, d := range st.Lags {
		res.lag.add(d)
	}
	res.lag.elapsed = res.window
	if miss := int(res.events) - res.delivered; miss > 0 {
		res.lag.fail(fmt.Sprintf("%d of %d events not delivered within %s", miss, res.events, timeout))
		res.lag.errs = miss
	}
	if st.BadSig > 0 {
		res.lag.fail(fmt.Sprintf("%d deliveries with a bad signature", st.BadSig))
		res.lag.errs += st.BadSig - 1
	}
	res.badSig, res.dupes = st.BadSig, st.Dupes
	res.lag.finish()
	return res, nil
}

// settledCount reads count until it has not moved for quiet (or until limit has passed), and
// returns the last value.
func settledCount(count func() (int64, error), quiet, limit time.Duration) (int64, error) {
	n, err := count()
	if err != nil {
		return 0, err
	}
	deadline, still := time.Now().Add(limit), time.Now()
	for time.Since(still) < quiet && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		m, err := count()
		if err != nil {
			return 0, err
		}
		if m != n {
			n, still = m, time.Now()
		}
	}
	return n, nil
}

// countPacer sends as fast as the clients allow and stops after that many requests.
type countPacer uint64

func (n countPacer) Pace(_ time.Duration, hits uint64) (time.Duration, bool) {
	return 0, hits >= uint64(n)
}

func (countPacer) Rate(time.Duration) float64 { return 0 }
