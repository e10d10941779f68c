package benchkit

import "testing"

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{6.2, 10}, {2.6, 5}, {2400, 2500}, {1.9, 2}, {37, 50}, {0, 1}} {
		if got := NiceCeil(c.in); got != c.want {
			t.Errorf("NiceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
