package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"switchboard/bench/benchkit"
)

type report struct {
	o                options
	rts              []route
	res              *results
	sent, skipped    int
	loadEnd          time.Duration
	samples          []sample
	settled          sample
	feeds            *feeds
	events           int64
	hooks            benchkit.ReceiverStats
	size0, size1     int64
	outage           outageTimes
	agent            benchkit.Agent
	missing, checked int
	background       backgroundOutcome
}

// slopes are the least-squares slopes of memory (MB) and goroutines per minute over the
// samples of the last 80% of the run, with the fitted lines for the chart.
type fit struct {
	slope, intercept float64 // per second
	ok               bool
	from             float64
}

func (r *report) fits() (mem, gor fit) {
	from := 0.2 * r.loadEnd.Seconds()
	var xs, ms, gs []float64
	for _, s := range r.samples {
		if !math.IsNaN(s.rss) && !math.IsNaN(s.goroutines) {
			xs = append(xs, s.t)
			ms = append(ms, s.rss/1e6)
			gs = append(gs, s.goroutines)
		}
	}
	tx, tm := Tail(xs, ms, from)
	_, tg := Tail(xs, gs, from)
	mem.slope, mem.intercept, mem.ok = Slope(tx, tm)
	gor.slope, gor.intercept, gor.ok = Slope(tx, tg)
	mem.from, gor.from = from, from
	return mem, gor
}

func mean(v []float64) float64 {
	s, n := 0.0, 0
	for _, x := range v {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return nan
	}
	return s / float64(n)
}

func msf(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

// print writes the report; bad is a failed run (a 5xx in a soak; in an outage a 5xx other
// than 503 database_unavailable with Retry-After, or an acknowledged request missing).
func (r *report) print(w io.Writer) (bad bool) {
	res := r.res
	o := r.o
	fmt.Fprintf(w, "scenario: %s, open loop at %.0f requests/s for %s (load ran %s); %d sent, %d not sent (generator's cap of %d in flight)\n",
		o.mode, o.rate, o.duration, r.loadEnd.Round(time.Millisecond), r.sent, r.skipped, o.maxInflight)
	fmt.Fprintf(w, "mix per %d requests: %s; model %s (ephemeral, stored), agent on %s with %d knowledge chunks (a turn: two vendor calls and a search)\n",
		mixTotal(o.mix), mixText(o.mix), o.chatModel, o.agentModel, o.chunks)
	subscription := "every event"
	if types := o.subscribed(); types != nil {
		subscription = strings.Join(types, ", ")
	}
	fmt.Fprintf(w, "held open: %d event feeds (GET /v1/events); a webhook endpoint for %s\n\n", o.feeds, subscription)
	fmt.Fprintf(w, "%-10s %8s %8s %9s %9s %9s %8s %10s %9s %9s %9s\n", "route", "sent", "2xx", "503 db", "503 noRA", "other5xx", "4xx", "transport", "p50 ms", "p99 ms", "max ms")
	total5xx, other5xx := 0, 0
	for i, rt := range r.rts {
		c := res.perRoute[i]
		n := 0
		for _, x := range c {
			n += x
		}
		lat := sortDurations(res.lat[i])
		slowest := time.Duration(0)
		if len(lat) > 0 {
			slowest = lat[len(lat)-1]
		}
		fmt.Fprintf(w, "%-10s %8d %8d %9d %9d %9d %8d %10d %9s %9s %9s\n", rt.name, n, c[outOK], c[outUnavailable], c[outUnavailNoRA], c[out5xx], c[out4xx], c[outTransport],
			msf(pct(lat, 0.5)), msf(pct(lat, 0.99)), msf(slowest))
		total5xx += c[outUnavailable] + c[outUnavailNoRA] + c[out5xx]
		other5xx += c[outUnavailNoRA] + c[out5xx]
	}
	for i, rt := range r.rts {
		for oc, e := range res.firstErr[i] {
			fmt.Fprintf(w, "  first %s of %s: %s\n", outcomeNames[oc], rt.name, oneLine(e))
		}
	}
	fmt.Fprintf(w, "\n5xx answers: %d", total5xx)
	if o.mode == "soak" {
		fmt.Fprintf(w, " (must be 0)\n")
		bad = total5xx > 0
	} else {
		fmt.Fprintf(w, ", of which other than 503 database_unavailable with Retry-After: %d (must be 0)\n", other5xx)
		bad = other5xx > 0
	}

	fmt.Fprintf(w, "\nevent feeds: %d events read over %d feeds; %d streams ended by the server, %d reopenings (a second apart), %d failed, %d gaps in the ids\n",
		r.feeds.events.Load(), o.feeds, r.feeds.ended.Load(), r.feeds.reopen.Load(), r.feeds.failedOpens.Load(), r.feeds.gaps.Load())
	if e, ok := r.feeds.firstFail.Load().(string); ok {
		fmt.Fprintf(w, "  first failed reopening: %s\n", oneLine(e))
	}
	fmt.Fprintf(w, "webhooks: %d events of the subscription committed during the run, %d delivered (distinct, signed), %d duplicates, %d bad signatures\n",
		r.events, r.hooks.Delivered, r.hooks.Dupes, r.hooks.BadSig)
	if bg := r.background; bg.acknowledged > 0 {
		fmt.Fprintf(w, "background responses: %d acknowledged (queued), then %d completed, %d failed, %d not finished %s after the load (must all complete)\n",
			bg.acknowledged, bg.completed, bg.failed, bg.pending, bg.waited.Round(time.Second))
		bad = bad || bg.completed != bg.acknowledged
	}

	turns := res.perRoute[1][outOK] + res.perRoute[2][outOK] + res.perRoute[3][outOK]
	growth := float64(r.size1 - r.size0)
	fmt.Fprintf(w, "database: %.1f MB before, %.1f MB after; %d turns stored (stored responses, agent and embed turns answered 2xx)",
		float64(r.size0)/1e6, float64(r.size1)/1e6, turns)
	if turns > 0 {
		fmt.Fprintf(w, ": %.2f MB per 1,000 turns", growth/1e6/float64(turns)*1000)
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "\n%8s %10s %10s %11s %10s %10s %8s %9s %6s\n", "t (s)", "RSS MB", "heap MB", "goroutines", "pool conns", "pool busy", "db conns", "feed subs", "ready")
	for _, s := range append(r.samples, r.settled) {
		fmt.Fprintf(w, "%8.0f %10s %10s %11s %10s %10s %8s %9s %6d\n", s.t, num(s.rss/1e6), num(s.heap/1e6), num(s.goroutines), num(s.poolTotal), num(s.poolInUse), num(s.dbConns), num(s.subscribers), s.ready)
	}
	fmt.Fprintf(w, "(the last row: 5 s after the load ended)\n")
	mem, gor := r.fits()
	if mem.ok {
		var ms, gs []float64
		for _, s := range r.samples {
			if s.t >= mem.from {
				ms = append(ms, s.rss/1e6)
				gs = append(gs, s.goroutines)
			}
		}
		fmt.Fprintf(w, "slope over the last 80%% (t >= %.0f s, least squares): memory %+.2f MB/min (%+.2f%% of its mean a minute), goroutines %+.1f/min (%+.2f%% of their mean a minute)\n",
			mem.from, mem.slope*60, 100*mem.slope*60/mean(ms), gor.slope*60, 100*gor.slope*60/mean(gs))
	} else {
		fmt.Fprintf(w, "slope: too few samples over the last 80%% of the run\n")
	}

	if o.mode == "outage" {
		bad = r.printOutage(w) || bad
	}
	return bad
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (r *report) printOutage(w io.Writer) (bad bool) {
	res, t := r.res, r.outage
	fmt.Fprintf(w, "\noutage: PostgreSQL stop began at %.1f s (stopped at %.1f s), start began at %.1f s, accepting at %.1f s\n",
		t.stopAt.Seconds(), t.stopped.Seconds(), t.startAt.Seconds(), t.started.Seconds())
	if t.err != nil {
		fmt.Fprintf(w, "outage failed: %v\n", t.err)
		return true
	}
	fmt.Fprintf(w, "\nper second (by the second a request was due):\n%6s %7s %7s %9s %9s %9s %6s %10s\n", "second", "sent", "2xx", "503 db", "503 noRA", "other5xx", "4xx", "transport")
	rows := res.seconds.Rows()
	for i, row := range rows {
		n := 0
		for _, x := range row {
			n += x
		}
		mark := ""
		if float64(i) >= math.Floor(t.stopAt.Seconds()) && float64(i) < t.started.Seconds() {
			mark = "  (PostgreSQL down)"
		}
		fmt.Fprintf(w, "%6d %7d %7d %9d %9d %9d %6d %10d%s\n", i, n, row[outOK], row[outUnavailable], row[outUnavailNoRA], row[out5xx], row[out4xx], row[outTransport], mark)
	}
	returned := t.started
	fmt.Fprintf(w, "\nfrom PostgreSQL's return (%.1f s) to the first 2xx answered:", returned.Seconds())
	for i, rt := range r.rts {
		if f := res.firstOK[i]; !f.IsZero() {
			fmt.Fprintf(w, " %s %.2f s;", rt.name, f.Sub(res.returned).Seconds())
		} else {
			fmt.Fprintf(w, " %s none;", rt.name)
		}
	}
	fmt.Fprintln(w)
	from := int(math.Ceil(returned.Seconds()))
	if s := BackAtTarget(rows, from, r.o.rate, 0.95); s >= 0 {
		fmt.Fprintf(w, "2xx rate back at the target (>= 95%% of %.0f/s answered 2xx, by the second due): second %d, %.1f s after the return\n", r.o.rate, s, float64(s)-returned.Seconds())
	} else {
		fmt.Fprintf(w, "2xx rate never back at the target (>= 95%% of %.0f/s) after the return\n", r.o.rate)
		bad = true
	}
	var before *sample
	for i := range r.samples {
		if r.samples[i].t < t.stopAt.Seconds()-1 { // a sample at the stop may read half-way through it
			before = &r.samples[i]
		}
	}
	if before != nil {
		fmt.Fprintf(w, "before the outage (t=%.0f s): %s goroutines, pool %s connections, %s database connections; after the load (settled): %s goroutines, pool %s, %s database connections\n",
			before.t, num(before.goroutines), num(before.poolTotal), num(before.dbConns), num(r.settled.goroutines), num(r.settled.poolTotal), num(r.settled.dbConns))
	}
	fmt.Fprintf(w, "acknowledged (2xx) stored responses and agent turns checked in the database: %d, missing: %d (must be 0)\n", r.checked, r.missing)
	return bad || r.missing > 0
}

// write saves samples.csv, seconds.csv, latency.csv and chart.svg into dir.
func (r *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("t_seconds,rss_bytes,heap_inuse_bytes,goroutines,pool_connections,pool_in_use,db_connections,feed_subscribers,ready_status\n")
	for _, s := range append(r.samples, r.settled) {
		fmt.Fprintf(&b, "%.1f,%s,%s,%s,%s,%s,%s,%s,%d\n", s.t, num(s.rss), num(s.heap), num(s.goroutines), num(s.poolTotal), num(s.poolInUse), num(s.dbConns), num(s.subscribers), s.ready)
	}
	if err := os.WriteFile(filepath.Join(dir, "samples.csv"), []byte(strings.ReplaceAll(b.String(), ",-", ",")), 0o644); err != nil {
		return err
	}
	b.Reset()
	b.WriteString("second")
	for _, n := range outcomeNames {
		b.WriteString("," + n)
	}
	b.WriteString("\n")
	for i, row := range r.res.seconds.Rows() {
		fmt.Fprintf(&b, "%d", i)
		for _, x := range row {
			fmt.Fprintf(&b, ",%d", x)
		}
		b.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "seconds.csv"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "latency.csv"), []byte(r.latencyCSV()), 0o644); err != nil {
		return err
	}
	mem, gor := r.fits()
	var xs, ms, hs, gs []float64
	for _, s := range r.samples {
		xs = append(xs, s.t)
		ms = append(ms, s.rss/1e6)
		hs = append(hs, s.heap/1e6)
		gs = append(gs, s.goroutines)
	}
	series := []benchkit.Series{
		{Title: "resident memory", Unit: "MB", X: xs, Y: ms, Fit: mem.ok, FitFrom: mem.from, FitSlope: mem.slope, FitIntercept: mem.intercept,
			Note: fmt.Sprintf("dashed: least squares over the last 80%%, %+.2f MB/min", mem.slope*60)},
		{Title: "Go heap in use", Unit: "MB", X: xs, Y: hs, Note: "go_memstats_heap_inuse_bytes"},
		{Title: "goroutines", Unit: "count", X: xs, Y: gs, Fit: gor.ok, FitFrom: gor.from, FitSlope: gor.slope, FitIntercept: gor.intercept,
			Note: fmt.Sprintf("dashed: least squares over the last 80%%, %+.1f/min", gor.slope*60)},
	}
	if wx, wy := r.windowP99(); len(wx) > 0 {
		series = append(series, benchkit.Series{Title: fmt.Sprintf("p99 of every route's 2xx, per %d s", windowSecs), Unit: "ms", X: wx, Y: wy,
			Note: "by the window each request was due in (latency.csv: per route, p50 and p99)"})
	}
	f, err := os.Create(filepath.Join(dir, "chart.svg"))
	if err != nil {
		return err
	}
	caption := fmt.Sprintf("bench/run.sh %s: %.0f requests/s for %s, %s; sampled every %s", r.o.mode, r.o.rate, r.o.duration, mixText(r.o.mix), r.o.sample)
	err = benchkit.LineChart(f, fmt.Sprintf("Switchboard under the %s load: memory, goroutines and p99", r.o.mode), caption, "seconds since the load began", series)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// windowSecs is the width of latency.csv's windows and of the chart's p99 points.
const windowSecs = 10

// latencyCSV is, per window and route, the 2xx answers' count, p50 and p99 in ms.
func (r *report) latencyCSV() string {
	var b strings.Builder
	b.WriteString("window_start_seconds,route,answers_2xx,p50_ms,p99_ms\n")
	for _, w := range r.windowIndexes() {
		for ri, name := range routeNames {
			d := sortDurations(r.res.windows[ri][w])
			if len(d) == 0 {
				continue
			}
			fmt.Fprintf(&b, "%d,%s,%d,%.1f,%.1f\n", w*windowSecs, name, len(d), ms(pct(d, 0.50)), ms(pct(d, 0.99)))
		}
	}
	return b.String()
}

// windowP99 is the p99 of all routes' 2xx together, per window, for the chart.
func (r *report) windowP99() (xs, ys []float64) {
	for _, w := range r.windowIndexes() {
		var all []time.Duration
		for ri := range routeNames {
			all = append(all, r.res.windows[ri][w]...)
		}
		xs = append(xs, float64(w*windowSecs))
		ys = append(ys, ms(pct(sortDurations(all), 0.99)))
	}
	return xs, ys
}

func (r *report) windowIndexes() []int {
	seen := map[int]bool{}
	for ri := range routeNames {
		for w := range r.res.windows[ri] {
			seen[w] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
