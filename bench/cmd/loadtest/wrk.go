package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// wrk (https://github.com/wg/wrk, Debian's `wrk`) drives scenario 7's closed-loop rows when
// loadtest run -gen wrk (bench/run.sh peers does). On two vCPUs the load generator's CPU is
// taken from the processes it measures: vegeta, a Go library, spent 89–120 µs of CPU per
// request in the ephemeral row at 64 clients, a third of the server's own cost there; wrk, an
// event loop in C, 39–48 (docs/benchmarks.md, twelfth pass). Issue 17's reference table implies a generator of wrk's kind: its mock called
// directly answers 76,500 req/s at 64 clients, which vegeta's own cost would not allow on two
// vCPUs. Each connection is one client: wrk sends its next request when the previous answer
// has been read, as vegeta's closed loop does.
//
// The rows keep vegeta's semantics. A Lua script counts an answer that is not a 200 carrying
// the target's marker as an error, and at the end prints the run's totals and percentiles.
// wrk keeps its latencies in a histogram of one-microsecond buckets, so its percentiles are
// nearest-rank over every answer to the microsecond (it records the latency of error answers
// too; a row with errors is a failed row either way).

// wrkLine is the prefix of the lines the script's done() prints, among wrk's own report.
const wrkLine = "loadtest-wrk"

// wrkLoop runs wrk against t with c connections for d and reads its report into a sample.
func wrkLoop(bin string, t target, c int, d time.Duration) (*sample, error) {
	dir, err := os.MkdirTemp("", "loadtest-wrk-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	body := filepath.Join(dir, "body")
	if err := os.WriteFile(body, t.body, 0o600); err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "script.lua")
	if err := os.WriteFile(script, []byte(wrkScript(t, body)), 0o600); err != nil {
		return nil, err
	}
	threads := min(c, runtime.NumCPU())
	secs := max(1, int(d.Round(time.Second)/time.Second))
	cmd := exec.Command(bin, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(c), "-d", fmt.Sprintf("%ds", secs),
		"--timeout", "15s", "-s", script, t.url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("wrk: %w: %s%s", err, stderr.String(), out)
	}
	return parseWrkReport(out)
}

// wrkScript is the Lua script of one target: its method, headers and body (read from
// bodyPath, so any bytes go through), the per-thread count of bad answers, and the report.
func wrkScript(t target, bodyPath string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "wrk.method = %s\n", luaString(t.method))
	fmt.Fprintf(&b, "local f = assert(io.open(%s, \"rb\"))\nwrk.body = f:read(\"*a\")\nf:close()\n", luaString(bodyPath))
	for name, values := range t.header {
		if len(values) > 0 {
			fmt.Fprintf(&b, "wrk.headers[%s] = %s\n", luaString(name), luaString(values[0]))
		}
	}
	fmt.Fprintf(&b, "local marker = %s\n", luaString(string(t.expect)))
	b.WriteString(`bad = 0
function response(status, headers, body)
  if status ~= 200 or (marker ~= "" and not string.find(body, marker, 1, true)) then bad = bad + 1 end
end
local threads = {}
function setup(thread) table.insert(threads, thread) end
function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + t:get("bad") end
  local e = summary.errors
  io.write(string.format("` + wrkLine + ` requests=%d duration_us=%d bad=%d connect=%d read=%d write=%d timeout=%d" ..
    " p50_us=%d p99_us=%d p999_us=%d max_us=%d\n",
    summary.requests, summary.duration, bad, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
`)
	return b.String()
}

// luaString quotes s as a Lua 5.1 string literal: printable ASCII as is, everything else as
// a decimal escape (LuaJIT, wrk's Lua, reads those the same).
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "\\%03d", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// parseWrkReport reads the script's line out of wrk's output.
func parseWrkReport(out []byte) (*sample, error) {
	var line string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if f := sc.Text(); strings.HasPrefix(f, wrkLine+" ") {
			line = f
		}
	}
	if line == "" {
		return nil, fmt.Errorf("wrk report: no %s line in %q", wrkLine, out)
	}
	v := map[string]int64{}
	for _, kv := range strings.Fields(line)[1:] {
		k, num, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("wrk report: %q", kv)
		}
		v[k] = n
	}
	s := &sample{elapsed: time.Duration(v["duration_us"]) * time.Microsecond}
	for range v["bad"] {
		s.fail("status not 200 or the body without the marker")
	}
	for _, k := range []string{"connect", "read", "write", "timeout"} {
		for range v[k] {
			s.fail("wrk " + k + " error")
		}
	}
	s.ok = int(v["requests"] - v["bad"])
	us := func(k string) time.Duration { return time.Duration(v[k]) * time.Microsecond }
	s.quantiles = map[float64]time.Duration{0.50: us("p50_us"), 0.99: us("p99_us"), 0.999: us("p999_us"), 1: us("max_us")}
	return s, nil
}
