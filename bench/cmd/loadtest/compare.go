package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// compare prints two runs of the same plan side by side, row by row: throughput and the
// p50/p99 of each, with head/baseline ratios. Rows are matched by scenario and load; a row
// of only one run is shown with a dash on the other side. Ratios are what to read: the
// machine is shared and absolute figures move between runs, but both runs here shared the
// same minutes, cluster and mock.
func compare(w io.Writer, baseFile, headFile string) error {
	base, err := readRows(baseFile)
	if err != nil {
		return err
	}
	head, err := readRows(headFile)
	if err != nil {
		return err
	}
	byKey := map[string]row{}
	for _, r := range base {
		byKey[r.Scenario+"|"+r.Load] = r
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tload\tthroughput base → head\tratio\tp50 ms base → head\tratio\tp99 ms base → head\tratio")
	for _, h := range head {
		b, ok := byKey[h.Scenario+"|"+h.Load]
		if !ok {
			fmt.Fprintf(tw, "%s\t%s\t- → %.0f\t\t- → %.2f\t\t- → %.2f\t\n", h.Scenario, h.Load, h.RPS, h.P50, h.P99)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f → %.0f\t%s\t%.2f → %.2f\t%s\t%.2f → %.2f\t%s\n", h.Scenario, h.Load,
			b.RPS, h.RPS, ratio(h.RPS, b.RPS), b.P50, h.P50, ratio(h.P50, b.P50), b.P99, h.P99, ratio(h.P99, b.P99))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "ratio = head / baseline: above 1 is more throughput, or more latency.")
	return nil
}

func ratio(head, base float64) string {
	if base == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", head/base)
}

func readRows(path string) ([]row, error) {
	raw, err := os.ReadFile(path) // #nosec G304 -- a path the operator gives on the command line
	if err != nil {
		return nil, err
	}
	var rows []row
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// compareCommand is `loadtest compare BASELINE.json HEAD.json`.
func compareCommand(args []string) {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: loadtest compare BASELINE.json HEAD.json  (files written by run -json)")
		os.Exit(2)
	}
	if err := compare(os.Stdout, args[0], args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest compare:", strings.TrimSpace(err.Error()))
		os.Exit(1)
	}
}
