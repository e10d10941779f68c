package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"switchboard/bench/benchkit"
)

// chartMain is `smsload chart -o FILE [-title T] [-caption C] LABEL=RESULTS.json[=COLOR] ...`:
// the webhooks' p99 second by second of several runs (their -json reports), on one scale,
// against the 50 ms.
func chartMain(args []string) error {
	fs := flag.NewFlagSet("chart", flag.ExitOnError)
	out := fs.String("o", "sms-p99.svg", "the SVG to write")
	title := fs.String("title", "Two-way SMS: the webhooks' p99, second by second", "the chart's title")
	caption := fs.String("caption", "", "the line under the title (where and when the runs were made)")
	_ = fs.Parse(args)
	palette := []string{"#1565c0", "#42a5f5", "#0d47a1", "#ef6c00", "#ffa726", "#6d4c41"}
	var lines []benchkit.Line
	for i, arg := range fs.Args() {
		parts := strings.SplitN(arg, "=", 3)
		if len(parts) < 2 {
			return fmt.Errorf("%q: want LABEL=RESULTS.json[=COLOR]", arg)
		}
		l, err := p99Line(parts[0], parts[1])
		if err != nil {
			return err
		}
		l.Color = palette[i%len(palette)]
		if len(parts) == 3 {
			l.Color = parts[2]
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return fmt.Errorf("no runs given")
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	return benchkit.CompareChart(f, *title, *caption, "seconds from the first webhook", "ms", lines, 50, "target: p99 under 50 ms")
}

// p99Line reads one run's report and makes its per-second p99 a line.
func p99Line(label, path string) (benchkit.Line, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return benchkit.Line{}, err
	}
	var r struct{ Timeline []second }
	if err := json.Unmarshal(b, &r); err != nil {
		return benchkit.Line{}, fmt.Errorf("%s: %w", path, err)
	}
	l := benchkit.Line{Label: label}
	for _, s := range r.Timeline {
		if s.OK == 0 {
			continue
		}
		l.X = append(l.X, float64(s.At))
		l.Y = append(l.Y, float64(s.P99)/float64(time.Millisecond))
	}
	return l, nil
}
