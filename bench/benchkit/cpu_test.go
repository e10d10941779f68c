package benchkit

import (
	"os"
	"testing"
)

func TestParseProcStatTakesTheFieldsAfterTheLastParenthesis(t *testing.T) {
	// A command name may hold spaces and parentheses; utime 14, stime 15, cutime 16, cstime 17.
	line := "4242 (post gres: (x) y) S 17 4242 4242 0 -1 4194560 100 0 0 0 1000 200 30 4 20 0 1 0 500 0 0\n"
	pid, st, ok := parseProcStat(line)
	if !ok || pid != 4242 || st.ppid != 17 || st.ticks != 1000+200+30+4 {
		t.Fatalf("parseProcStat = %d %+v %v, want 4242 {ppid:17 ticks:1234} true", pid, st, ok)
	}
	for _, bad := range []string{"", "4242 (x", "x (y) S 1 2", "4242 (x) S 1 2 3"} {
		if _, _, ok := parseProcStat(bad); ok {
			t.Errorf("parseProcStat(%q) ok, want not", bad)
		}
	}
}

func TestParseCPUWatch(t *testing.T) {
	w, err := ParseCPUWatch("server=12, postgres=34")
	if err != nil || w["server"] != 12 || w["postgres"] != 34 || len(w) != 2 {
		t.Fatalf("ParseCPUWatch = %v, %v", w, err)
	}
	for _, bad := range []string{"server", "server=x", "=12", "server=-1"} {
		if _, err := ParseCPUWatch(bad); err == nil {
			t.Errorf("ParseCPUWatch(%q) accepted", bad)
		}
	}
}

func TestSnapshotCountsThisProcessCPU(t *testing.T) {
	w := CPUWatch{"loadgen": os.Getpid()}
	before := w.Snapshot()
	after := before
	x := 0
	// Burn CPU until the kernel has accounted a tick more (at most a few billion steps).
	for i := 0; i < 200 && after["loadgen"] <= before["loadgen"]; i++ {
		for j := 0; j < 10_000_000; j++ {
			x += j ^ i
		}
		after = w.Snapshot()
	}
	if after["loadgen"] <= before["loadgen"] {
		t.Fatalf("this process's CPU did not grow: %v then %v (%d)", before, after, x)
	}
	per := PerRequest(before, after, 2)
	want := float64(after["loadgen"]-before["loadgen"]) * 1e6 / ClockTicks / 2
	if per["loadgen"] != want {
		t.Fatalf("perRequest = %v, want loadgen %v", per, want)
	}
}

func TestPerRequestAndCell(t *testing.T) {
	per := PerRequest(map[string]int{"server": 100, "mock": 50, "idle": 7}, map[string]int{"server": 143, "mock": 67, "idle": 7}, 1000)
	if len(per) != 2 || per["server"] != 430 || per["mock"] != 170 {
		t.Fatalf("perRequest = %v, want server 430 and mock 170 µs (idle left out)", per)
	}
	if got := CPUCell(per); got != "server 430, mock 170" {
		t.Fatalf("cpuCell = %q", got)
	}
	if got := CPUCell(nil); got != "-" {
		t.Fatalf("CPUCell(nil) = %q", got)
	}
	if PerRequest(nil, map[string]int{"a": 1}, 10) != nil || PerRequest(map[string]int{}, map[string]int{}, 0) != nil {
		t.Fatal("perRequest without a snapshot or requests should be nil")
	}
}
