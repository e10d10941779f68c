package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// sample is the outcome of one measured run: latencies of the successful operations, the
// errors, and the wall time the operations spanned.
type sample struct {
	lat      []time.Duration // sorted by finish()
	ok, errs int
	elapsed  time.Duration
	firstErr string
	errKinds map[string]int
	// quantiles, when lat is empty, are the percentiles (and 1: the maximum) of a run whose
	// generator reported those rather than every latency (wrk.go).
	quantiles map[float64]time.Duration
}

func (s *sample) fail(msg string) {
	s.errs++
	if s.errKinds == nil {
		s.errKinds = map[string]int{}
	}
	if len(msg) > 120 {
		msg = msg[:120]
	}
	if s.firstErr == "" {
		s.firstErr = msg
	}
	s.errKinds[msg]++
}

func (s *sample) add(d time.Duration) {
	s.ok++
	s.lat = append(s.lat, d)
}

func (s *sample) finish() *sample {
	sort.Slice(s.lat, func(i, j int) bool { return s.lat[i] < s.lat[j] })
	return s
}

// pct is the nearest-rank percentile (q in 0..1) of the successful operations.
func (s *sample) pct(q float64) time.Duration {
	if len(s.lat) == 0 {
		return s.quantiles[q]
	}
	i := int(math.Ceil(q*float64(len(s.lat)))) - 1
	return s.lat[min(max(i, 0), len(s.lat)-1)]
}

func (s *sample) max() time.Duration {
	if len(s.lat) == 0 {
		return s.quantiles[1]
	}
	return s.lat[len(s.lat)-1]
}

func (s *sample) rate() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.ok) / s.elapsed.Seconds()
}

func (s *sample) errSummary() string {
	if s.errs == 0 {
		return ""
	}
	var parts []string
	for k, v := range s.errKinds {
		parts = append(parts, fmt.Sprintf("%d× %s", v, k))
	}
	sort.Strings(parts)
	if len(parts) > 3 {
		parts = append(parts[:3], "...")
	}
	return strings.Join(parts, "; ")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// row is one line of the result table.
type row struct {
	Scenario string   `json:"scenario"`
	Load     string   `json:"load"`
	Mode     string   `json:"mode"` // closed (fixed clients), open (constant arrival rate), or a description
	RPS      float64  `json:"rps"`
	RPSUnit  string   `json:"rps_unit,omitempty"`
	Metric   string   `json:"metric,omitempty"` // what the percentiles measure, when not the request latency
	P50      float64  `json:"p50_ms"`
	P99      float64  `json:"p99_ms"`
	P999     float64  `json:"p999_ms"`
	Max      float64  `json:"max_ms"`
	OK       int      `json:"ok"`
	Errors   int      `json:"errors"`
	AddedP50 *float64 `json:"added_p50_ms,omitempty"`
	AddedP99 *float64 `json:"added_p99_ms,omitempty"`
	Target   string   `json:"target,omitempty"`
	Met      *bool    `json:"met,omitempty"`
	Note     string   `json:"note,omitempty"`
	// Offered is the arrival rate asked of an open-loop run.
	Offered int `json:"offered_rps,omitempty"`
	// CPU is the microseconds of CPU per request each watched process spent during the row
	// (loadtest run -cpu; scenario 7).
	CPU map[string]float64 `json:"cpu_us_per_request,omitempty"`
}

func rowOf(scenario, load, mode string, s *sample) row {
	return row{Scenario: scenario, Load: load, Mode: mode, RPS: s.rate(), P50: ms(s.pct(0.50)), P99: ms(s.pct(0.99)),
		P999: ms(s.pct(0.999)), Max: ms(s.max()), OK: s.ok, Errors: s.errs, Note: s.errSummary()}
}

// added sets the added latency of r over a baseline row (none when the baseline did not
// run, e.g. with -only 3).
func (r *row) added(base row) {
	if base.OK == 0 {
		return
	}
	a50, a99 := r.P50-base.P50, r.P99-base.P99
	r.AddedP50, r.AddedP99 = &a50, &a99
}

func (r *row) verdict(target string, met bool) {
	r.Target, r.Met = target, &met
}
