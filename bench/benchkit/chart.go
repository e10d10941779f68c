package benchkit

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// Median is the middle of v (the mean of the two middle values of an even count), 0 when empty.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// NiceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten, so the ticks read well.
func NiceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*exp >= v {
			return m * exp
		}
	}
	return 10 * exp
}

// Tick formats an axis value: no decimals from 100, one from 10, two below.
func Tick(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
	default:
		return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.2f", v), "0"), ".0")
	}
}

// Series is one line of a LineChart panel: Y[i] at X[i]. A fitted line (Fit) is drawn dashed
// from FitFrom to the last X: y = FitIntercept + FitSlope*x.
type Series struct {
	Title, Unit            string
	X, Y                   []float64
	Fit                    bool
	FitFrom                float64
	FitSlope, FitIntercept float64
	Note                   string // under the panel, e.g. the slope in words
}

const (
	linePanelW = 760
	linePanelH = 200
	lineLeft   = 70
	lineTop    = 70
)

// LineChart writes one panel per series, stacked, sharing the X axis (XLabel), as SVG.
func LineChart(w io.Writer, title, caption, xLabel string, series []Series) error {
	width := lineLeft + linePanelW + 30
	height := lineTop + len(series)*(linePanelH+70) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#fff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="18" font-weight="bold" fill="#222">%s</text>`+"\n", 20, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="50" font-size="12" fill="#555">%s</text>`+"\n", 20, html.EscapeString(caption))
	xmax := 0.0
	for _, s := range series {
		for _, x := range s.X {
			xmax = math.Max(xmax, x)
		}
	}
	xstep := NiceCeil(xmax / 8)
	xtop := xstep * math.Max(1, math.Ceil(xmax/xstep))
	for i, s := range series {
		linePanel(&b, s, lineTop+i*(linePanelH+70), xtop, xstep, xLabel)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func linePanel(b *strings.Builder, s Series, y0 int, xtop, xstep float64, xLabel string) {
	top := 0.0
	for _, v := range s.Y {
		top = math.Max(top, v*1.15)
	}
	step := NiceCeil(top / 4)
	top = step * math.Max(1, math.Ceil(top/step))
	x := func(v float64) float64 { return float64(lineLeft) + v/xtop*linePanelW }
	y := func(v float64) float64 { return float64(y0+linePanelH) - v/top*linePanelH }
	fmt.Fprintf(b, `<g><text x="%d" y="%d" font-size="13" font-weight="bold" fill="#222">%s (%s)</text>`+"\n", lineLeft, y0-8, html.EscapeString(s.Title), html.EscapeString(s.Unit))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f6f6f6" stroke="#ccc"/>`+"\n", lineLeft, y0, linePanelW, linePanelH)
	for t := 0.0; t <= top+step/2; t += step {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="10" fill="#666" text-anchor="end">%s</text>`+"\n", lineLeft-4, y(t)+3, Tick(t))
	}
	for t := 0.0; t <= xtop+xstep/2; t += xstep {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="10" fill="#666" text-anchor="middle">%s</text>`+"\n", x(t), y0+linePanelH+14, Tick(t))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="10" fill="#666" text-anchor="end">%s</text>`+"\n", lineLeft+linePanelW, y0+linePanelH+28, html.EscapeString(xLabel))
	var pts []string
	for i := range s.X {
		if i < len(s.Y) && !math.IsNaN(s.Y[i]) {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.X[i]), y(s.Y[i])))
		}
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="#1565c0" stroke-width="2" points="%s"/>`+"\n", strings.Join(pts, " "))
	if s.Fit && len(s.X) > 0 {
		x1, x2 := s.FitFrom, s.X[len(s.X)-1]
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#c62828" stroke-width="1.5" stroke-dasharray="5,3"/>`+"\n",
			x(x1), x(x2), y(s.FitIntercept+s.FitSlope*x1), y(s.FitIntercept+s.FitSlope*x2))
	}
	if s.Note != "" {
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" fill="#444">%s</text>`+"\n", lineLeft, y0+linePanelH+28, html.EscapeString(s.Note))
	}
	b.WriteString("</g>\n")
}

// Line is one run's line in a CompareChart: Y[i] at X[i], drawn in Color (a CSS colour).
type Line struct {
	Label, Color string
	X, Y         []float64
}

// CompareChart writes one panel with every line on the same scales, as SVG, and Target
// (when above 0) as a dashed horizontal line labelled TargetLabel: runs of two builds read
// side by side, against the figure they must stay under. The legend lists the lines' labels.
func CompareChart(w io.Writer, title, caption, xLabel, unit string, lines []Line, target float64, targetLabel string) error {
	const panelH = 300
	legendH := 16 * len(lines)
	width := lineLeft + linePanelW + 30
	height := lineTop + panelH + 40 + legendH + 10
	xmax, top := 0.0, target*1.15
	for _, l := range lines {
		for i := range l.X {
			xmax = math.Max(xmax, l.X[i])
			if i < len(l.Y) && !math.IsNaN(l.Y[i]) {
				top = math.Max(top, l.Y[i]*1.05)
			}
		}
	}
	xstep := NiceCeil(xmax / 8)
	xtop := xstep * math.Max(1, math.Ceil(xmax/xstep))
	step := NiceCeil(top / 5)
	top = step * math.Max(1, math.Ceil(top/step))
	x := func(v float64) float64 { return float64(lineLeft) + v/xtop*linePanelW }
	y := func(v float64) float64 { return float64(lineTop+panelH) - v/top*panelH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#fff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="20" y="28" font-size="18" font-weight="bold" fill="#222">%s</text>`+"\n", html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="20" y="50" font-size="12" fill="#555">%s</text>`+"\n", html.EscapeString(caption))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f6f6f6" stroke="#ccc"/>`+"\n", lineLeft, lineTop, linePanelW, panelH)
	for t := 0.0; t <= top+step/2; t += step {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="10" fill="#666" text-anchor="end">%s</text>`+"\n", lineLeft-4, y(t)+3, Tick(t))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" fill="#666">%s</text>`+"\n", 8, lineTop-6, html.EscapeString(unit))
	for t := 0.0; t <= xtop+xstep/2; t += xstep {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" fill="#666" text-anchor="middle">%s</text>`+"\n", x(t), lineTop+panelH+14, Tick(t))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" fill="#666" text-anchor="end">%s</text>`+"\n", lineLeft+linePanelW, lineTop+panelH+28, html.EscapeString(xLabel))
	if target > 0 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#c62828" stroke-width="1.5" stroke-dasharray="6,4"/>`+"\n", lineLeft, lineLeft+linePanelW, y(target), y(target))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" fill="#c62828" text-anchor="end">%s</text>`+"\n", lineLeft+linePanelW-4, y(target)-4, html.EscapeString(targetLabel))
	}
	for i, l := range lines {
		var pts []string
		for j := range l.X {
			if j < len(l.Y) && !math.IsNaN(l.Y[j]) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(l.X[j]), y(math.Min(l.Y[j], top))))
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", l.Color, strings.Join(pts, " "))
		ly := lineTop + panelH + 44 + 16*i
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", lineLeft, lineLeft+24, ly-4, ly-4, l.Color)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#333">%s</text>`+"\n", lineLeft+32, ly, html.EscapeString(l.Label))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
