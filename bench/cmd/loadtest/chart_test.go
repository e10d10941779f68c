package main

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// peersRows are the rows of one peers run, as `loadtest run -plan peers -only 7` writes them.
func peersRows(portkey1, portkey64, eph1, eph64, p99, stored64 float64) []row {
	return []row{
		{Scenario: "7 Portkey gateway 1.15.2 (openai)", Load: "c=1", RPS: portkey1},
		{Scenario: "7 Switchboard chat ephemeral (openai)", Load: "c=1", RPS: eph1},
		{Scenario: "7 Portkey gateway 1.15.2 (openai)", Load: "c=64", RPS: portkey64},
		{Scenario: "7 Switchboard chat ephemeral (openai)", Load: "c=64", RPS: eph64, P99: p99},
		{Scenario: "7 Switchboard response stored (openai)", Load: "c=1", RPS: 250},
		{Scenario: "7 Switchboard response stored (openai)", Load: "c=64", RPS: stored64},
	}
}

func TestPeersRunReadsScenario7sRows(t *testing.T) {
	r, ok := peersRunOf(peersRows(500, 1000, 1200, 5100, 31, 1900))
	if !ok {
		t.Fatal("a complete run was refused")
	}
	want := peersRun{portkey1: 500, portkey64: 1000, ephemeral1: 1200, ephemeral64: 5100, ephemeralP99: 31, stored64: 1900}
	if r != want {
		t.Fatalf("got %+v, want %+v", r, want)
	}
	if _, ok := peersRunOf(peersRows(500, 1000, 1200, 5100, 31, 1900)[:5]); ok {
		t.Fatal("a run without the stored row at 64 clients was taken")
	}
	if _, ok := peersRunOf([]row{{Scenario: "2 chat completions ephemeral (anthropic)", Load: "c=64", RPS: 900}}); ok {
		t.Fatal("rows of another scenario were taken")
	}
}

// TestChartCountsTheRunsThatMetEachTarget: the first run meets the 5× target and misses
// 2,000 turns/s, the second the other way round; each panel says so, in order.
func TestChartCountsTheRunsThatMetEachTarget(t *testing.T) {
	a, _ := peersRunOf(peersRows(500, 1000, 1200, 5100, 31, 1900))
	b, _ := peersRunOf(peersRows(400, 1000, 900, 4200, 19, 2100))
	var out strings.Builder
	if err := drawTargets(&out, []peersRun{a, b}, "two runs"); err != nil {
		t.Fatal(err)
	}
	svg := out.String()
	wellFormed(t, svg)
	// Panels: ephemeral 64 (5.1× met, 4.2× not), ephemeral 1 (2.4×, 2.25×: both), p99 (31
	// not, 19 met), stored turns/s (1,900 not, 2,100 met), stored ratio (1.9×, 2.1×: both).
	want := []string{"met in 1 of 2", "met in 2 of 2", "met in 1 of 2", "met in 1 of 2", "met in 2 of 2"}
	checkVerdicts(t, svg, want)
	if n := strings.Count(svg, "<circle"); n != 2*len(issue17Panels) {
		t.Fatalf("%d dots, want %d", n, 2*len(issue17Panels))
	}
	if strings.Contains(svg, "bare Go proxy:") {
		t.Fatal("a ceiling was drawn for runs without the bare proxy's rows")
	}
}

// TestChartDrawsTheBareProxyBesideTheRunsThatMeasuredIt: the ceiling of the three ephemeral
// panels, for the run that has the bare proxy's rows only.
func TestChartDrawsTheBareProxyBesideTheRunsThatMeasuredIt(t *testing.T) {
	rows := append(peersRows(500, 1000, 1200, 5100, 31, 1900),
		row{Scenario: "7 bare Go proxy (forwards only)", Load: "c=1", RPS: 2500},
		row{Scenario: "7 bare Go proxy (forwards only)", Load: "c=64", RPS: 8000, P99: 24})
	a, ok := peersRunOf(rows)
	if !ok || a.bare1 != 2500 || a.bare64 != 8000 || a.bareP99 != 24 {
		t.Fatalf("peersRunOf = %+v, %v", a, ok)
	}
	b, _ := peersRunOf(peersRows(400, 1000, 900, 4200, 19, 2100))
	var out strings.Builder
	if err := drawTargets(&out, []peersRun{a, b}, "two runs"); err != nil {
		t.Fatal(err)
	}
	svg := out.String()
	for _, want := range []string{"run 1, bare Go proxy: 8 × Portkey", "run 1, bare Go proxy: 5 × Portkey", "run 1, bare Go proxy: 24 ms"} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %q in the chart", want)
		}
	}
	if n := strings.Count(svg, "bare Go proxy:"); n != 3 {
		t.Fatalf("%d ceilings drawn, want 3 (run 1's ephemeral panels)", n)
	}
}

// withBare is a peers run with the bare Go proxy's row at 64 clients.
func withBare(t *testing.T, rows []row, bare64, bareP99 float64) peersRun {
	t.Helper()
	r, ok := peersRunOf(append(rows, row{Scenario: "7 bare Go proxy (forwards only)", Load: "c=64", RPS: bare64, P99: bareP99}))
	if !ok {
		t.Fatal("a complete run was refused")
	}
	return r
}

// TestIssue49ChartJudgesEachRatioWithinItsRun: run a is 0.9 of its proxy (met), p99 1.5 times
// the proxy's (met: at most), stored 0.5 of ephemeral (not); run b 0.6 (not), 2.0 (not) and
// 0.625 (met).
func TestIssue49ChartJudgesEachRatioWithinItsRun(t *testing.T) {
	a := withBare(t, peersRows(500, 1000, 1200, 5400, 30, 2700), 6000, 20)
	b := withBare(t, peersRows(500, 1000, 1200, 4800, 40, 3000), 8000, 20)
	var out strings.Builder
	if err := drawChart(&out, chartKinds["49"], []peersRun{a, b}, "two runs"); err != nil {
		t.Fatal(err)
	}
	svg := out.String()
	wellFormed(t, svg)
	want := []string{"met in 1 of 2", "met in 1 of 2", "met in 1 of 2"}
	checkVerdicts(t, svg, want)
	for _, want := range []string{"Issue 49, items 1 and 2", "run 1: 0.9 × bare Go proxy", "run 2: 2 × the proxy&#39;s p99", "target ≤ 1.5", "target ≥ 0.6"} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %q in the chart", want)
		}
	}
	if got := strings.Count(svg, `fill="#2e7d32"><title>`); got != 3 {
		t.Errorf("%d green dots, want 3 (a's first two, b's last)", got)
	}
}

// wellFormed fails t unless svg is well-formed XML.
func wellFormed(t *testing.T, svg string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
}

// checkVerdicts fails t unless the chart's panels say want ("met in N of M"), in order.
func checkVerdicts(t *testing.T, svg string, want []string) {
	t.Helper()
	var got []string
	for rest := svg; ; {
		i := strings.Index(rest, "met in ")
		if i < 0 {
			break
		}
		got = append(got, rest[i:i+len("met in 1 of 2")])
		rest = rest[i+1:]
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("verdicts %q, want %q", got, want)
	}
}
