// Command testsummary reads `go test -json` on stdin and writes what a person needs: one
// line per package as it finishes, the full output of every failed test (and of a package
// that failed outside its tests, such as a build error), and a last line of totals. It exits
// 1 when anything failed, so `go test -json ./... | testsummary` (with pipefail) fails
// exactly when go test does.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of test2json (go doc test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output and build-fail events
}

type totals struct {
	passed, failed, skipped  int
	packages, failedPackages int
	noTests                  int
	failedNames              []string
	buildFailed              bool
	started                  time.Time
	unparsed                 int
	slowest                  []timed // top-level tests, the slowest first (at most slowestShown)
}

// timed is one top-level test and how long it ran (after any wait for a parallel slot).
type timed struct {
	name    string
	elapsed float64
}

// slowestShown is how many of the slowest tests the summary lists: where a run's time goes,
// without a profile.
const slowestShown = 10

// noteTime keeps the slowest top-level tests; subtests are inside their parent's time.
func (t *totals) noteTime(e event) {
	if e.Test == "" || strings.Contains(e.Test, "/") {
		return
	}
	t.slowest = append(t.slowest, timed{e.Package + "." + e.Test, e.Elapsed})
	sort.SliceStable(t.slowest, func(i, j int) bool { return t.slowest[i].elapsed > t.slowest[j].elapsed })
	if len(t.slowest) > slowestShown {
		t.slowest = t.slowest[:slowestShown]
	}
}

func main() {
	os.Exit(summarize(os.Stdin, os.Stdout, time.Now()))
}

func summarize(in io.Reader, out io.Writer, started time.Time) int {
	t := totals{started: started}
	outputs := map[string]*strings.Builder{} // package/test -> its output so far
	key := func(e event) string { return e.Package + "\x00" + e.Test }
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not test2json: go test's own messages (a build error of older Go); show it.
			fmt.Fprintf(out, "%s\n", line)
			t.unparsed++
			continue
		}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			t.buildFailed = true
		case "output":
			b := outputs[key(e)]
			if b == nil {
				b = &strings.Builder{}
				outputs[key(e)] = b
			}
			b.WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test != "" {
				t.noteTime(e)
				switch e.Action {
				case "pass":
					t.passed++
				case "skip":
					t.skipped++
				case "fail":
					t.failed++
					t.failedNames = append(t.failedNames, e.Package+"."+e.Test)
					if b := outputs[key(e)]; b != nil {
						fmt.Fprintf(out, "--- FAIL: %s (%s)\n%s", e.Test, e.Package, indentOutput(b.String()))
					}
				}
				delete(outputs, key(e))
				continue
			}
			t.packages++
			pkgOut := outputs[key(e)]
			delete(outputs, key(e))
			switch {
			case e.Action == "fail":
				t.failedPackages++
				fmt.Fprintf(out, "FAIL  %s (%.1fs)\n", e.Package, e.Elapsed)
				if pkgOut != nil && !failedTestsIn(t.failedNames, e.Package) {
					fmt.Fprint(out, indentOutput(pkgOut.String())) // a panic, a build or setup failure
				}
			case e.Action == "skip" || (pkgOut != nil && strings.Contains(pkgOut.String(), "[no test files]")):
				t.noTests++
			default:
				fmt.Fprintf(out, "ok    %s (%.1fs)\n", e.Package, e.Elapsed)
			}
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(out, "testsummary: reading go test output: %v\n", err)
		return 1
	}
	failed := t.failed > 0 || t.failedPackages > 0 || t.buildFailed || t.packages == 0
	if len(t.failedNames) > 0 {
		sort.Strings(t.failedNames)
		fmt.Fprintf(out, "\nFailed tests:\n  %s\n", strings.Join(t.failedNames, "\n  "))
	}
	if len(t.slowest) > 0 {
		fmt.Fprintf(out, "\nSlowest tests:\n")
		for _, s := range t.slowest {
			fmt.Fprintf(out, "  %6.1fs  %s\n", s.elapsed, s.name)
		}
	}
	status := "PASS"
	if failed {
		status = "FAIL"
	}
	fmt.Fprintf(out, "\n%s: %d tests passed, %d failed, %d skipped; %d packages (%d failed, %d without tests); %s\n",
		status, t.passed, t.failed, t.skipped, t.packages, t.failedPackages, t.noTests, time.Since(t.started).Round(time.Second))
	if failed {
		return 1
	}
	return 0
}

func failedTestsIn(names []string, pkg string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, pkg+".") {
			return true
		}
	}
	return false
}

func indentOutput(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString("    " + l)
		}
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	return b.String()
}
