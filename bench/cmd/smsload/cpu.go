package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The CPU of the run: how much each process of the benchmark took, and how much the rest of
// the machine took meanwhile. On a shared machine the second number says whether a run
// measured the server or its neighbours.

const clockTicks = 100 // USER_HZ: /proc counts CPU time in hundredths of a second on Linux

// procTicks is the CPU time of pid and of its children, live and exited (PostgreSQL's
// backends are children of the postmaster; its own counters hold only the exited ones).
func procTicks(pid int) int64 {
	t, _ := statTicks(pid, true)
	entries, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, e := range entries {
		b, err := os.ReadFile(e)
		if err != nil {
			continue
		}
		f := statFields(b)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(e)))
			c, _ := statTicks(child, false)
			t += c
		}
	}
	return t
}

// statTicks is utime+stime of pid, plus cutime+cstime when children is set.
func statTicks(pid int, children bool) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := statFields(b)
	if len(f) < 15 {
		return 0, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	// After the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
	n := 2
	if children {
		n = 4
	}
	var t int64
	for _, s := range f[11 : 11+n] {
		v, _ := strconv.ParseInt(s, 10, 64)
		t += v
	}
	return t, nil
}

// statFields are the fields of a /proc/PID/stat after the command name (which may hold
// spaces, so it is cut at its closing parenthesis).
func statFields(b []byte) []string {
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	return strings.Fields(s)
}

// machineTicks is the busy and stolen time of every CPU (/proc/stat).
func machineTicks() (busy, steal int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	v := func(i int) int64 {
		if i >= len(f) {
			return 0
		}
		n, _ := strconv.ParseInt(f[i], 10, 64)
		return n
	}
	return v(1) + v(2) + v(3) + v(6) + v(7), v(8)
}

// cpuMeter measures the run's processes (name=pid) and the machine from begin to each
// window's end. A process about to be killed is read by final first, since a dead process's
// time is lost; its last reading stands for it afterwards.
type cpuMeter struct {
	pids          map[string]int
	start, frozen map[string]int64
	busy0, steal0 int64
	began         time.Time
}

// cpuWindow is what the processes and the machine took from begin to one moment.
type cpuWindow struct {
	Elapsed              time.Duration
	CPUs                 int
	ByProcess            map[string]float64 // CPU-seconds
	Ours, Others, Stolen float64            // CPU-seconds
}

func newCPUMeter(spec string) (*cpuMeter, error) {
	m := &cpuMeter{pids: map[string]int{}, start: map[string]int64{}, frozen: map[string]int64{}}
	for _, kv := range strings.Split(spec, ",") {
		if kv == "" {
			continue
		}
		name, p, ok := strings.Cut(kv, "=")
		pid, err := strconv.Atoi(p)
		if !ok || err != nil {
			return nil, fmt.Errorf("-cpu: %q is not name=pid", kv)
		}
		m.pids[name] = pid
	}
	m.pids["smsload"] = os.Getpid()
	return m, nil
}

func (m *cpuMeter) begin() {
	for name, pid := range m.pids {
		m.start[name] = procTicks(pid)
	}
	m.busy0, m.steal0 = machineTicks()
	m.began = time.Now()
}

// final reads a process for the last time (before it is killed).
func (m *cpuMeter) final(name string) {
	if pid, ok := m.pids[name]; ok {
		m.frozen[name] = procTicks(pid)
	}
}

// window is the CPU taken since begin.
func (m *cpuMeter) window() *cpuWindow {
	w := &cpuWindow{Elapsed: time.Since(m.began), CPUs: cpus(), ByProcess: map[string]float64{}}
	busy, steal := machineTicks()
	for name, pid := range m.pids {
		end, frozen := m.frozen[name]
		if !frozen {
			end = procTicks(pid)
		}
		s := float64(end-m.start[name]) / clockTicks
		w.ByProcess[name] = s
		w.Ours += s
	}
	w.Others = max(0, float64(busy-m.busy0)/clockTicks-w.Ours)
	w.Stolen = float64(steal-m.steal0) / clockTicks
	return w
}

func cpus() int {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if len(line) > 3 && strings.HasPrefix(line, "cpu") && line[3] >= '0' && line[3] <= '9' {
			n++
		}
	}
	return n
}
