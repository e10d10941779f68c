package benchkit

import (
	"strings"
	"testing"
)

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{6.2, 10}, {2.6, 5}, {2400, 2500}, {1.9, 2}, {37, 50}, {0, 1}} {
		if got := NiceCeil(c.in); got != c.want {
			t.Errorf("NiceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestCompareChartDrawsEveryLineAndTheTarget(t *testing.T) {
	var b strings.Builder
	lines := []Line{{Label: "head", Color: "#1565c0", X: []float64{0, 1, 2}, Y: []float64{10, 20, 15}},
		{Label: "base", Color: "#999", X: []float64{0, 1, 2}, Y: []float64{40, 80, 60}}}
	if err := CompareChart(&b, "t", "c", "s", "ms", lines, 50, "target 50 ms"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Errorf("%d lines drawn, want 2", n)
	}
	for _, want := range []string{"head", "base", "target 50 ms", `stroke-dasharray="6,4"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
}
