package dashboard

import (
	"fmt"
	"math"
	"strconv"

	"switchboard/money"
)

// A chart is drawn on the server as inline SVG: bars with a title each (a tooltip, read by
// screen readers), and the same numbers in a table under it for those who cannot see it.
type chart struct {
	Title  string
	Bars   []bar
	Points []point
	Max    string // the top of the scale, as text
	First  string // the first and last labels, under the axis
	Last   string
	Width  int
	Height int
	Base   int // the y of the axis
}

type point struct {
	Label string
	Value float64
	Text  string
}

type bar struct {
	X, Y, W, H float64
	Tip        string
}

func barChart(title string, pts []point, unit string) chart {
	const width, height, top, base = 600, 160, 4, 159
	c := chart{Title: title, Points: pts, Width: width, Height: height, Base: base}
	hi := 0.0
	for _, p := range pts {
		hi = math.Max(hi, p.Value)
	}
	if hi == 0 {
		hi = 1
	}
	c.Max = unit + strconv.FormatFloat(hi, 'f', -1, 64)
	if unit == "$" {
		c.Max = fmt.Sprintf("$%.2f", hi)
	}
	if len(pts) > 0 {
		c.First, c.Last = pts[0].Label, pts[len(pts)-1].Label
	}
	step := float64(width) / float64(max(len(pts), 1))
	for i, p := range pts {
		h := p.Value / hi * float64(base-top)
		c.Bars = append(c.Bars, bar{X: float64(i)*step + 1, Y: float64(base) - h, W: step - 2, H: h, Tip: p.Label + ": " + p.Text})
	}
	return c
}

func usd(nano int64) string { return "$" + money.FormatUSD(nano) }

func itoa(i int) string { return strconv.Itoa(i) }
