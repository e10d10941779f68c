package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"switchboard/bench/benchkit"
)

func cell(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.2f", *v)
}

func verdictCell(r row) string {
	if r.Met == nil {
		return ""
	}
	if *r.Met {
		return "MET: " + r.Target
	}
	return "NOT MET: " + r.Target
}

func rateCell(r row) string {
	unit := r.RPSUnit
	if unit == "" {
		unit = "req/s"
	}
	s := fmt.Sprintf("%.0f %s", r.RPS, unit)
	if r.Offered > 0 {
		s += fmt.Sprintf(" (of %d)", r.Offered)
	}
	return s
}

func metricCell(r row) string {
	if r.Metric == "" {
		return "latency"
	}
	return r.Metric
}

var header = []string{"scenario", "load", "mode", "throughput", "measures", "p50 ms", "p99 ms", "p99.9 ms", "errors", "added p50", "added p99", "target", "CPU µs/req"}

func cells(r row) []string {
	return []string{r.Scenario, r.Load, r.Mode, rateCell(r), metricCell(r),
		fmt.Sprintf("%.2f", r.P50), fmt.Sprintf("%.2f", r.P99), fmt.Sprintf("%.2f", r.P999),
		fmt.Sprintf("%d/%d", r.Errors, r.OK+r.Errors), cell(r.AddedP50), cell(r.AddedP99), verdictCell(r), benchkit.CPUCell(r.CPU)}
}

// printTable writes the one table of a run, then the notes of the rows that have any.
func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(cells(r), "\t"))
	}
	_ = tw.Flush()
	for _, r := range rows {
		if r.Note != "" {
			fmt.Fprintf(w, "  * %s %s: %s\n", r.Scenario, r.Load, r.Note)
		}
	}
}

func printMarkdown(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat("---|", len(header)))
	for _, r := range rows {
		fmt.Fprintln(w, "| "+strings.Join(cells(r), " | ")+" |")
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		if r.Note != "" {
			fmt.Fprintf(w, "- %s %s: %s\n", r.Scenario, r.Load, r.Note)
		}
	}
}
