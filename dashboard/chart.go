package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"

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
	// Empty, when set, replaces the drawing: a scale over nothing but zeros would invent a
	// "highest day" that never happened.
	Empty string
}

type point struct {
	Label string
	Value float64
	Text  string
	Exact string // the exact value, when Text rounds it (a tooltip)
}

type bar struct {
	X, Y, W, H float64
	Tip        string
}

// barChart draws pts; empty is what it says instead when every value is zero.
func barChart(title string, pts []point, unit, empty string) chart {
	const width, height, top, base = 600, 160, 4, 159
	c := chart{Title: title, Points: pts, Width: width, Height: height, Base: base}
	hi := 0.0
	for _, p := range pts {
		hi = math.Max(hi, p.Value)
	}
	if hi == 0 {
		c.Empty = empty
		return c
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

// usd is an amount as people read money, in whole cents ($4.99, -$0.25).
func usd(nano int64) string { return dollars(money.FormatCents(nano)) }

// usdExact is an amount with every digit kept ($4.9876543): what a tooltip shows.
func usdExact(nano int64) string { return dollars(money.FormatUSD(nano)) }

func dollars(amount string) string {
	if rest, neg := strings.CutPrefix(amount, "-"); neg {
		return "-$" + rest
	}
	return "$" + amount
}

// moneyHTML shows an amount in cents with the exact amount as its tooltip: tables and cards
// stay readable, and nothing is lost to rounding.
func moneyHTML(nano int64) template.HTML {
	return template.HTML(`<span class="money" title="` + template.HTMLEscapeString(usdExact(nano)) + `">` + //nolint:gosec // digits, "$", "-" and "." only, escaped anyway
		template.HTMLEscapeString(usd(nano)) + `</span>`)
}

func itoa(i int) string { return strconv.Itoa(i) }
