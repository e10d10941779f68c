package main

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestSlope(t *testing.T) {
	xs := []float64{0, 1, 2, 3, 4}
	s, b, ok := Slope(xs, []float64{1, 3, 5, 7, 9})
	if !ok || s != 2 || b != 1 {
		t.Fatalf("Slope of y=1+2x = %v, %v, %v; want 2, 1, true", s, b, ok)
	}
	if s, _, ok := Slope(xs, []float64{5, 5, 5, 5, 5}); !ok || s != 0 {
		t.Fatalf("a flat line: slope %v, %v", s, ok)
	}
	// Noise around a flat line: the fit is flat, not the first-to-last difference.
	if s, _, _ := Slope(xs, []float64{10, 12, 8, 12, 10}); math.Abs(s) > 1e-9 {
		t.Fatalf("symmetric noise: slope %v, want 0", s)
	}
	if _, _, ok := Slope([]float64{1}, []float64{1}); ok {
		t.Fatal("one point has no slope")
	}
	if _, _, ok := Slope([]float64{2, 2}, []float64{1, 3}); ok {
		t.Fatal("equal xs have no slope")
	}
	tx, ty := Tail([]float64{0, 10, 20, 30}, []float64{1, 2, 3, 4}, 10)
	if len(tx) != 3 || tx[0] != 10 || ty[2] != 4 {
		t.Fatalf("Tail from 10: %v %v", tx, ty)
	}
}

func TestSecondsAndRecovery(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	s := NewSeconds(start)
	s.Add(start.Add(-time.Millisecond), outOK) // before the start: second 0
	s.Add(start.Add(999*time.Millisecond), outOK)
	s.Add(start.Add(time.Second), outUnavailable)
	s.Add(start.Add(3500*time.Millisecond), outOK)
	rows := s.Rows()
	if len(rows) != 4 || rows[0][outOK] != 2 || rows[1][outUnavailable] != 1 || rows[2] != ([nOutcomes]int{}) || rows[3][outOK] != 1 {
		t.Fatalf("rows %v", rows)
	}
	// Target 10/s: second 3 has 1, second 5 has 10.
	for range 9 {
		s.Add(start.Add(4*time.Second), outOK)
	}
	for range 10 {
		s.Add(start.Add(5*time.Second), outOK)
	}
	if got := BackAtTarget(s.Rows(), 1, 10, 0.95); got != 5 {
		t.Fatalf("back at target in second %d, want 5 (second 4 has 9 of 10)", got)
	}
	if got := BackAtTarget(s.Rows(), 1, 100, 0.95); got != -1 {
		t.Fatalf("never back: %d", got)
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		status    int
		db, retry bool
		err       error
		want      outcome
	}{
		{200, false, false, nil, outOK},
		{503, true, true, nil, outUnavailable},
		{503, true, false, nil, outUnavailNoRA},
		{503, false, true, nil, out5xx},
		{500, false, false, nil, out5xx},
		{429, false, true, nil, out4xx},
		{0, false, false, errors.New("connection refused"), outTransport},
	} {
		if got := classify(c.status, c.db, c.retry, c.err); got != c.want {
			t.Errorf("classify(%d, %v, %v, %v) = %s, want %s", c.status, c.db, c.retry, c.err, outcomeNames[got], outcomeNames[c.want])
		}
	}
}

func TestMixSequence(t *testing.T) {
	seq := mixSequence([]int{6, 3, 1, 0})
	if len(seq) != 10 {
		t.Fatalf("%d requests in a cycle, want 10", len(seq))
	}
	count := map[int]int{}
	for _, r := range seq {
		count[r]++
	}
	if count[0] != 6 || count[1] != 3 || count[2] != 1 || count[3] != 0 {
		t.Fatalf("counts %v", count)
	}
	// Interleaved: route 0 never three times in a row.
	for i := 2; i < len(seq); i++ {
		if seq[i] == 0 && seq[i-1] == 0 && seq[i-2] == 0 {
			t.Fatalf("route 0 bunched: %v", seq)
		}
	}
}
