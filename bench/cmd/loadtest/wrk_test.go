package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

func TestLuaStringEscapesWhatLuaWouldRead(t *testing.T) {
	got := luaString("a\"b\\c\n\u00e9")
	want := `"a\034b\092c\010\195\169"`
	if got != want {
		t.Fatalf("luaString = %s, want %s", got, want)
	}
}

func TestParseWrkReportCountsErrorsAndReadsThePercentiles(t *testing.T) {
	out := []byte("Running 5s test @ http://x\n  Latency 1.2ms\n" +
		wrkLine + " requests=10 duration_us=2000000 bad=2 connect=0 read=1 write=0 timeout=0" +
		" p50_us=900 p99_us=1500 p999_us=40000 max_us=41000\n")
	s, err := parseWrkReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.ok != 8 || s.errs != 3 {
		t.Fatalf("ok %d errs %d, want 8 and 3 (2 bad answers, 1 read error)", s.ok, s.errs)
	}
	if s.rate() != 4 {
		t.Fatalf("rate %v, want 8 good answers over 2 s", s.rate())
	}
	r := rowOf("x", "c=1", "closed", s)
	if r.P50 != 0.9 || r.P99 != 1.5 || r.P999 != 40 || r.Max != 41 {
		t.Fatalf("row p50 %v p99 %v p99.9 %v max %v", r.P50, r.P99, r.P999, r.Max)
	}
	if _, err := parseWrkReport([]byte("Running 5s test\n")); err == nil {
		t.Fatal("a report without the script's line parsed")
	}
}

// TestWrkLoopSendsTheTargetAndCountsBadAnswers runs the real wrk against a server that checks
// every request against the target and answers some with a 500, some with a 200 without the
// marker, and some slowly.
func TestWrkLoopSendsTheTargetAndCountsBadAnswers(t *testing.T) {
	bin, err := exec.LookPath("wrk")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("wrk is missing (make test installs it: scripts/ensure-wrk.sh)")
		}
		t.Skip("wrk is missing: scripts/ensure-wrk.sh installs it")
	}
	body := []byte("{\"say\":\"h\u00e9llo \\\"x\\\" ]] \\\\\"}\n")
	var mu sync.Mutex
	var n, bad, wrong int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		mu.Lock()
		n++
		i := n
		if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer k-1" || !bytes.Equal(got, body) {
			wrong++
		}
		if i%7 == 0 || i%11 == 0 {
			bad++
		}
		mu.Unlock()
		switch {
		case i%7 == 0:
			w.WriteHeader(http.StatusInternalServerError)
		case i%11 == 0:
			_, _ = w.Write([]byte(`{"finish_reason":"length"}`))
		default:
			if i%50 == 0 {
				time.Sleep(20 * time.Millisecond)
			}
			_, _ = w.Write([]byte(`{"finish_reason":"stop"}`))
		}
	}))
	defer srv.Close()
	tg := jsonTarget(srv.URL+"/v1/chat/completions", "k-1", nil)
	tg.body, tg.expect = body, []byte(`"finish_reason":"stop"`)
	const clients = 4
	s, err := wrkLoop(bin, tg, clients, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if wrong != 0 {
		t.Fatalf("%d of %d requests were not the target's method, header and body", wrong, n)
	}
	// wrk stops with up to one request per connection unanswered, which the server counted.
	answered := s.ok + s.errs
	if answered == 0 || answered > n || answered < n-clients {
		t.Fatalf("wrk counted %d answers (%d ok, %d errors), the server answered %d", answered, s.ok, s.errs, n)
	}
	if s.errs > bad || s.errs < bad-clients || s.errs == 0 {
		t.Fatalf("wrk counted %d errors, the server answered %d bad", s.errs, bad)
	}
	if s.pct(0.5) >= 20*time.Millisecond || s.pct(0.99) < 20*time.Millisecond {
		t.Fatalf("p50 %v, p99 %v: one answer in 50 took 20 ms", s.pct(0.5), s.pct(0.99))
	}
	if s.elapsed < 900*time.Millisecond {
		t.Fatalf("elapsed %v for a 1 s run", s.elapsed)
	}
}
