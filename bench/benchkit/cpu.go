package benchkit

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CPU per request: what each process of a run (the server, PostgreSQL, the mock, the peer
// gateway, the load generator itself) spent in user and system time during a round, divided
// by the round's requests. On a 2-core machine shared by all of them, throughput is these costs'
// sum, so a change is judged more finely by its CPU per request than by its req/s, which
// swings with whatever else the machine does.

// ClockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times (100 on Linux).
const ClockTicks = 100

// CPUWatch names the processes to account for, as a -cpu flag gives them: name=PID,... A
// process's children count with it: PostgreSQL's backends with the postmaster, a shell's
// command with the shell.
type CPUWatch map[string]int

// ParseCPUWatch reads "name=PID,name=PID".
func ParseCPUWatch(s string) (CPUWatch, error) {
	w := CPUWatch{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, pid, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(pid)
		if !ok || name == "" || err != nil || n <= 0 {
			return nil, fmt.Errorf("-cpu: %q is not NAME=PID", part)
		}
		w[name] = n
	}
	return w, nil
}

// procStat is one process's parent and CPU time in ticks (utime + stime of all its threads,
// plus cutime + cstime of its children that ended).
type procStat struct{ ppid, ticks int }

// readProcStats reads /proc/*/stat; processes that end meanwhile are skipped.
func readProcStats() map[int]procStat {
	out := map[int]procStat{}
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		pid, st, ok := parseProcStat(string(raw))
		if ok {
			out[pid] = st
		}
	}
	return out
}

// parseProcStat reads "PID (COMM) STATE PPID ..." where COMM may hold spaces and parentheses:
// the fields after the last ')' are state (3), ppid (4), ..., utime (14), stime (15),
// cutime (16), cstime (17).
func parseProcStat(s string) (int, procStat, bool) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 1 || end < open {
		return 0, procStat{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	f := strings.Fields(s[end+1:])
	if err != nil || len(f) < 15 {
		return 0, procStat{}, false
	}
	num := func(i int) int { n, _ := strconv.Atoi(f[i]); return n }
	return pid, procStat{ppid: num(1), ticks: num(11) + num(12) + num(13) + num(14)}, true
}

// Snapshot is each watched name's CPU time so far, in ticks: the process and its
// descendants.
func (w CPUWatch) Snapshot() map[string]int {
	if len(w) == 0 {
		return nil
	}
	stats := readProcStats()
	children := map[int][]int{}
	for pid, st := range stats {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	out := map[string]int{}
	for name, root := range w {
		total, queue := 0, []int{root}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			total += stats[pid].ticks
			queue = append(queue, children[pid]...)
		}
		out[name] = total
	}
	return out
}

// PerRequest turns two snapshots around a round into microseconds of CPU per request, for
// the processes that spent any.
func PerRequest(before, after map[string]int, requests int) map[string]float64 {
	if before == nil || after == nil || requests <= 0 {
		return nil
	}
	out := map[string]float64{}
	for name, t := range after {
		if d := t - before[name]; d > 0 {
			out[name] = float64(d) * 1e6 / ClockTicks / float64(requests)
		}
	}
	return out
}

// CPUCell is a round's CPU per request, the costliest process first: "server 434, mock 170".
func CPUCell(m map[string]float64) string {
	if len(m) == 0 {
		return "-"
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		if m[n] >= 1 {
			parts = append(parts, fmt.Sprintf("%s %.0f", n, m[n]))
		}
	}
	return strings.Join(parts, ", ")
}
