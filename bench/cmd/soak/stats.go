package main

import (
	"slices"
	"time"
)

// Slope is the least-squares line through (xs[i], ys[i]): y = intercept + slope*x. ok is
// false with fewer than two points or when every x is the same.
func Slope(xs, ys []float64) (slope, intercept float64, ok bool) {
	n := min(len(xs), len(ys))
	if n < 2 {
		return 0, 0, false
	}
	var sx, sy float64
	for i := range n {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/float64(n), sy/float64(n)
	var sxx, sxy float64
	for i := range n {
		dx := xs[i] - mx
		sxx += dx * dx
		sxy += dx * (ys[i] - my)
	}
	if sxx == 0 {
		return 0, 0, false
	}
	slope = sxy / sxx
	return slope, my - slope*mx, true
}

// Tail is the points of (xs, ys) with x >= from: the last 80% of a run is Tail(xs, ys, 0.2*d).
func Tail(xs, ys []float64, from float64) (tx, ty []float64) {
	for i := range min(len(xs), len(ys)) {
		if xs[i] >= from {
			tx = append(tx, xs[i])
			ty = append(ty, ys[i])
		}
	}
	return tx, ty
}

// outcome is how a request ended.
type outcome int

const (
	outOK          outcome = iota // 2xx
	outUnavailable                // 503 database_unavailable with Retry-After
	outUnavailNoRA                // 503 database_unavailable without Retry-After
	out5xx                        // any other 5xx
	out4xx                        // 4xx (429, 402, ...)
	outTransport                  // no HTTP answer (refused, reset, timeout)
	nOutcomes
)

var outcomeNames = [nOutcomes]string{"2xx", "503 db_unavailable", "503 no Retry-After", "other 5xx", "4xx", "transport"}

// classify is the outcome of an answer: status, whether its body names database_unavailable
// and whether it carries Retry-After; err is a transport error (no answer).
func classify(status int, dbUnavailable, retryAfter bool, err error) outcome {
	switch {
	case err != nil:
		return outTransport
	case status >= 200 && status < 300:
		return outOK
	case status == 503 && dbUnavailable && retryAfter:
		return outUnavailable
	case status == 503 && dbUnavailable:
		return outUnavailNoRA
	case status >= 500:
		return out5xx
	default:
		return out4xx
	}
}

// Seconds counts outcomes per whole second since a start, by the second a request was due.
type Seconds struct {
	start time.Time
	rows  [][nOutcomes]int
}

func NewSeconds(start time.Time) *Seconds { return &Seconds{start: start} }

// Index is the second of t (0 for the first second; times before the start go to 0).
func (s *Seconds) Index(t time.Time) int {
	d := t.Sub(s.start)
	if d < 0 {
		return 0
	}
	return int(d / time.Second)
}

// Add counts an outcome of a request due at t (not safe for concurrent use).
func (s *Seconds) Add(t time.Time, o outcome) {
	i := s.Index(t)
	for len(s.rows) <= i {
		s.rows = append(s.rows, [nOutcomes]int{})
	}
	s.rows[i][o]++
}

// Rows are the counts per second, the outcomes in outcome order.
func (s *Seconds) Rows() [][nOutcomes]int { return s.rows }

// BackAtTarget is the first second, from the second `from` on, in which the requests due
// answered 2xx at least frac of the target rate; -1 when none did.
func BackAtTarget(rows [][nOutcomes]int, from int, target, frac float64) int {
	for i := max(from, 0); i < len(rows); i++ {
		if float64(rows[i][outOK]) >= frac*target {
			return i
		}
	}
	return -1
}

// pct is the q quantile of sorted durations (nearest rank), 0 when empty.
func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1)+0.5)]
}

// mixSequence spreads the routes over one cycle of sum(weights) requests, each route
// weights[i] times, interleaved (smooth weighted round robin): a route's requests come
// evenly spaced rather than in a burst per cycle.
func mixSequence(weights []int) []int {
	total := 0
	for _, w := range weights {
		total += w
	}
	cur := make([]int, len(weights))
	seq := make([]int, 0, total)
	for range total {
		best := -1
		for i, w := range weights {
			cur[i] += w
			if w > 0 && (best < 0 || cur[i] > cur[best]) {
				best = i
			}
		}
		cur[best] -= total
		seq = append(seq, best)
	}
	return seq
}

// sortDurations sorts in place and returns d.
func sortDurations(d []time.Duration) []time.Duration {
	slices.Sort(d)
	return d
}
