package main

import (
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"strings"

	"switchboard/bench/benchkit"
)

// chart draws issue 17's targets, or issue 49's items 1 and 2, against several peers runs
// (scenario 7, the -json files of `bench/run.sh peers`): a panel per target, a dot per run,
// the target as a dashed line and how many runs met it. Where the figures of many runs pile
// up, this says at a glance which targets hold in every run, in some, or in none.

// peersRun is what one peers run measured, by the rows of scenario 7.
type peersRun struct {
	portkey1, portkey64     float64 // req/s
	ephemeral1, ephemeral64 float64
	ephemeralP99            float64 // ms, at 64 clients
	stored64                float64 // turns/s
	// The bare Go proxy's rows (loadtest proxy), when the run has them: the ceiling of a Go
	// gateway on that machine at that time, drawn beside the run's dot.
	bare1, bare64, bareP99 float64
}

// peersRunOf reads a run's rows; false when one of the rows the targets need is missing.
func peersRunOf(rows []row) (peersRun, bool) {
	var r peersRun
	found := 0
	for _, x := range rows {
		name := strings.TrimPrefix(x.Scenario, "7 ")
		if x.Scenario == name || x.RPS <= 0 {
			continue
		}
		set := func(p *float64, v float64) {
			if *p == 0 {
				*p, found = v, found+1
			}
		}
		switch {
		case strings.HasPrefix(name, "Portkey") && x.Load == "c=1":
			set(&r.portkey1, x.RPS)
		case strings.HasPrefix(name, "Portkey") && x.Load == "c=64":
			set(&r.portkey64, x.RPS)
		case strings.HasPrefix(name, "Switchboard chat ephemeral") && x.Load == "c=1":
			set(&r.ephemeral1, x.RPS)
		case strings.HasPrefix(name, "Switchboard chat ephemeral") && x.Load == "c=64":
			set(&r.ephemeral64, x.RPS)
			r.ephemeralP99 = x.P99
		case strings.HasPrefix(name, "Switchboard response stored") && x.Load == "c=64":
			set(&r.stored64, x.RPS)
		case strings.HasPrefix(name, "bare Go proxy") && x.Load == "c=1":
			r.bare1 = x.RPS
		case strings.HasPrefix(name, "bare Go proxy") && x.Load == "c=64":
			r.bare64, r.bareP99 = x.RPS, x.P99
		}
	}
	return r, found == 5
}

// panel is one target: a value per run and the line it must clear.
type panel struct {
	title, detail, unit string
	target              float64
	below               bool // the value must stay under the target (a latency)
	atMost              bool // the value may reach the target but not pass it (a ratio of latencies)
	value               func(peersRun) float64
	// ceiling is the bare Go proxy's figure for the same measure (0: none in that run).
	ceiling func(peersRun) float64
}

func (p panel) met(v float64) bool {
	switch {
	case p.below:
		return v < p.target
	case p.atMost:
		return v <= p.target
	}
	return v >= p.target
}

// word is how the target reads on the chart.
func (p panel) word() string {
	switch {
	case p.below:
		return "<"
	case p.atMost:
		return "≤"
	}
	return "≥"
}

// issue17Panels are the targets of issue 17 that scenario 7 measures, as the issue words them.
var issue17Panels = []panel{
	{title: "ephemeral chat", detail: "64 clients, req/s", unit: "× Portkey", target: 5, value: func(r peersRun) float64 { return r.ephemeral64 / r.portkey64 },
		ceiling: func(r peersRun) float64 { return r.bare64 / r.portkey64 }},
	{title: "ephemeral chat", detail: "1 client, req/s", unit: "× Portkey", target: 2, value: func(r peersRun) float64 { return r.ephemeral1 / r.portkey1 },
		ceiling: func(r peersRun) float64 { return r.bare1 / r.portkey1 }},
	{title: "ephemeral chat", detail: "64 clients, p99", unit: "ms", target: 20, below: true, value: func(r peersRun) float64 { return r.ephemeralP99 },
		ceiling: func(r peersRun) float64 { return r.bareP99 }},
	{title: "stored response", detail: "64 clients", unit: "turns/s", target: 2000, value: func(r peersRun) float64 { return r.stored64 }},
	{title: "stored response", detail: "64 clients, req/s", unit: "× Portkey", target: 1.5, value: func(r peersRun) float64 { return r.stored64 / r.portkey64 }},
}

// issue49Panels are items 1 and 2 of issue 49, each a ratio within one run: ephemeral chat
// completions against the bare Go proxy in front of the same mock (req/s, and p99), stored
// responses against ephemeral chat completions. A run without the bare proxy's rows cannot
// be drawn (chartCommand refuses it).
var issue49Panels = []panel{
	{title: "ephemeral chat", detail: "64 clients, req/s", unit: "× bare Go proxy", target: 0.9, value: func(r peersRun) float64 { return r.ephemeral64 / r.bare64 }},
	{title: "ephemeral chat", detail: "64 clients, p99", unit: "× the proxy's p99", target: 1.5, atMost: true, value: func(r peersRun) float64 { return r.ephemeralP99 / r.bareP99 }},
	{title: "stored response", detail: "64 clients, req/s", unit: "× ephemeral chat", target: 0.6, value: func(r peersRun) float64 { return r.stored64 / r.ephemeral64 }},
}

// chartKind is one chart `loadtest chart -issue` draws: its title and panels, and whether a
// run must have the bare Go proxy's rows to be drawn.
type chartKind struct {
	title     string
	panels    []panel
	needsBare bool
}

var chartKinds = map[string]chartKind{
	"17": {title: "Issue 17 targets", panels: issue17Panels},
	"49": {title: "Issue 49, items 1 and 2", panels: issue49Panels, needsBare: true},
}

const (
	panelWidth  = 180
	panelHeight = 260
	chartTop    = 90
	chartLeft   = 20
	// chartMinWidth fits the title and a caption of about 110 characters.
	chartMinWidth = 760
)

// drawTargets writes issue 17's chart as SVG; caption says where the runs come from.
func drawTargets(w io.Writer, runs []peersRun, caption string) error {
	return drawChart(w, chartKinds["17"], runs, caption)
}

// drawChart writes kind's chart of runs as SVG.
func drawChart(w io.Writer, kind chartKind, runs []peersRun, caption string) error {
	// At least wide enough for the title and the caption of a chart of three panels.
	width := max(chartLeft*2+panelWidth*len(kind.panels), chartMinWidth)
	height := chartTop + panelHeight + 116
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#fff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="18" font-weight="bold" fill="#222">%s, %d peers run%s (one dot per run)</text>`+"\n", chartLeft, html.EscapeString(kind.title), len(runs), plural(len(runs)))
	fmt.Fprintf(&b, `<text x="%d" y="50" font-size="12" fill="#555">%s</text>`+"\n", chartLeft, html.EscapeString(caption))
	for i, p := range kind.panels {
		drawPanel(&b, p, runs, chartLeft+i*panelWidth)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#555">green: the run met the target; red: it did not. Dashed line: the target.</text>`+"\n", chartLeft, height-28)
	if kind.needsBare {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#555">each ratio within one run; the proxy: a bare Go reverse proxy in front of the same mock.</text>`+"\n", chartLeft, height-12)
	} else {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#555">grey square: a bare Go proxy (forwards only) measured in the same run, the ceiling of any Go gateway on that machine.</text>`+"\n", chartLeft, height-12)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func drawPanel(b *strings.Builder, p panel, runs []peersRun, x0 int) {
	values := make([]float64, len(runs))
	top := p.target * 1.25
	met := 0
	ceilings := make([]float64, len(runs))
	for i, r := range runs {
		values[i] = p.value(r)
		top = math.Max(top, values[i]*1.1)
		if p.ceiling != nil {
			ceilings[i] = p.ceiling(r)
			top = math.Max(top, ceilings[i]*1.1)
		}
		if p.met(values[i]) {
			met++
		}
	}
	step := benchkit.NiceCeil(top / 4)
	top = step * math.Ceil(top/step)
	plotX, plotW := x0+48, panelWidth-64
	y := func(v float64) float64 { return float64(chartTop+panelHeight) - v/top*float64(panelHeight) }
	fmt.Fprintf(b, `<g><text x="%d" y="%d" font-size="13" font-weight="bold" fill="#222">%s</text>`+"\n", x0+8, chartTop-24, html.EscapeString(p.title))
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" fill="#444">%s</text>`+"\n", x0+8, chartTop-8, html.EscapeString(p.detail))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f6f6f6" stroke="#ccc"/>`+"\n", plotX, chartTop, plotW, panelHeight)
	for t := 0.0; t <= top+step/2; t += step {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="10" fill="#666" text-anchor="end">%s</text>`+"\n", plotX-4, y(t)+3, benchkit.Tick(t))
	}
	fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#333" stroke-width="1.5" stroke-dasharray="5,3"/>`+"\n", plotX, plotX+plotW, y(p.target), y(p.target))
	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="10" fill="#333">target %s %s</text>`+"\n", plotX+4, y(p.target)-4, html.EscapeString(p.word()), benchkit.Tick(p.target))
	for i, v := range values {
		cx := float64(plotX) + float64(plotW)*(float64(i)+0.5)/float64(len(values))
		if c := ceilings[i]; c > 0 {
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="none" stroke="#777" stroke-width="1.5"><title>run %d, bare Go proxy: %s %s</title></rect>`+"\n", cx-4, y(c)-4, i+1, benchkit.Tick(c), html.EscapeString(p.unit))
		}
		color := "#c62828"
		if p.met(v) {
			color = "#2e7d32"
		}
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"><title>run %d: %s %s</title></circle>`+"\n", cx, y(v), color, i+1, benchkit.Tick(v), html.EscapeString(p.unit))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" fill="#444">%s</text>`+"\n", x0+8, chartTop+panelHeight+18, html.EscapeString(p.unit))
	verdict, color := fmt.Sprintf("met in %d of %d", met, len(values)), "#2e7d32"
	switch met {
	case 0:
		color = "#c62828"
	case len(values):
	default:
		color = "#b26a00"
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13" font-weight="bold" fill="%s">%s</text>`+"\n", x0+8, chartTop+panelHeight+38, color, verdict)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" fill="#444">median %s</text></g>`+"\n", x0+8, chartTop+panelHeight+56, benchkit.Tick(benchkit.Median(values)))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// chartCommand is `loadtest chart -o FILE.svg [-issue 17|49] [-caption TEXT] RESULTS.json...`.
func chartCommand(args []string) {
	fs := flag.NewFlagSet("chart", flag.ExitOnError)
	out := fs.String("o", "", "the SVG file to write")
	caption := fs.String("caption", "", "the line under the title (default: the files read)")
	issue := fs.String("issue", "17", "whose targets: 17 (against Portkey) or 49 (items 1 and 2: against the bare Go proxy, stored against ephemeral)")
	_ = fs.Parse(args)
	files := fs.Args()
	kind, known := chartKinds[*issue]
	if *out == "" || len(files) == 0 || !known {
		chartUsage()
	}
	var runs []peersRun
	for _, f := range files {
		rows, err := readRows(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadtest chart:", err)
			os.Exit(1)
		}
		r, ok := peersRunOf(rows)
		if !ok {
			fmt.Fprintf(os.Stderr, "loadtest chart: %s lacks scenario 7's rows (Portkey, ephemeral and stored at 1 and 64 clients)\n", f)
			os.Exit(1)
		}
		if kind.needsBare && (r.bare64 <= 0 || r.bareP99 <= 0) {
			fmt.Fprintf(os.Stderr, "loadtest chart: %s lacks the bare Go proxy's row at 64 clients, which issue %s's ratios need\n", f, *issue)
			os.Exit(1)
		}
		runs = append(runs, r)
	}
	if *caption == "" {
		*caption = fmt.Sprintf("bench/run.sh peers, 5 s rows; %s", strings.Join(files, ", "))
	}
	f, err := os.Create(*out)
	if err == nil {
		err = drawChart(f, kind, runs, *caption)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest chart:", err)
		os.Exit(1)
	}
}

func chartUsage() {
	fmt.Fprintln(os.Stderr, "usage: loadtest chart -o FILE.svg [-issue 17|49] [-caption TEXT] RESULTS.json...  (files of bench/run.sh peers)")
	os.Exit(2)
}
