// Command fanout is the load of `bench/run.sh fanout` (issue 49, item 5): many open event
// feeds on one replica, and how long an event takes to reach all of them.
//
//	fanout -server URL -key KEY [-feeds 10000] [-events 10] [-pid PID]
//
// It opens -feeds streams of GET /v1/events (one connection each, -dialers at a time) and
// waits until every one has answered 200. Then, -events times, it starts a background
// response (POST /v1/responses, background: true), whose `meta_response.completed` event
// every feed receives, and measures for each feed the time from just before the POST to the
// event's frame: an upper bound of the fan-out, since it includes the response itself. It
// prints p50, p99 and the maximum over every delivery, the deliveries missed, and the server
// process's resident memory (-pid: VmRSS with every feed open, and its peak, VmHWM).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	server := flag.String("server", "", "the server's base URL")
	key := flag.String("key", "", "an API key")
	model := flag.String("model", "beta-5.4-mini", "the background responses' model")
	feeds := flag.Int("feeds", 10_000, "event feeds to hold open")
	events := flag.Int("events", 10, "events to send through them, one at a time")
	dialers := flag.Int("dialers", 100, "feeds opened at a time")
	pid := flag.Int("pid", 0, "the server's process id, for its memory")
	pprof := flag.String("pprof", "", "the server's PPROF_ADDR: a CPU profile of the events' phase goes to -profile")
	profileOut := flag.String("profile", "fanout.pprof", "where the CPU profile goes")
	flag.Parse()
	if *server == "" || *key == "" {
		fmt.Fprintln(os.Stderr, "fanout: -server and -key are required")
		os.Exit(2)
	}
	f := &fan{server: strings.TrimSuffix(*server, "/"), key: *key, arrived: make([][]time.Time, *feeds)}
	began := time.Now()
	if err := f.open(*feeds, *dialers); err != nil {
		fmt.Fprintln(os.Stderr, "fanout:", err)
		os.Exit(1)
	}
	fmt.Printf("feeds: %d open in %s; server memory with them open: %s\n", *feeds, time.Since(began).Round(time.Millisecond), memory(*pid, "VmRSS"))
	var lat, spread []time.Duration
	missed := 0
	cpu0 := cpuTime(*pid)
	profiled := make(chan error, 1)
	if *pprof != "" {
		go func() { profiled <- profile(*pprof, *profileOut, 10*time.Second) }()
	}
	for i := range *events {
		sent := time.Now()
		if err := f.background(*model, i); err != nil {
			fmt.Fprintln(os.Stderr, "fanout:", err)
			os.Exit(1)
		}
		deadline := time.Now().Add(30 * time.Second)
		for f.received.Load() < int64((i+1)*(*feeds)) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		f.mu.Lock()
		var first, last time.Time
		for _, a := range f.arrived {
			if len(a) > i {
				lat = append(lat, a[i].Sub(sent))
				if first.IsZero() || a[i].Before(first) {
					first = a[i]
				}
				if a[i].After(last) {
					last = a[i]
				}
			} else {
				missed++
			}
		}
		f.mu.Unlock()
		spread = append(spread, last.Sub(first))
		time.Sleep(200 * time.Millisecond)
	}
	cpu := cpuTime(*pid) - cpu0
	slices.Sort(lat)
	slices.Sort(spread)
	pct := func(d []time.Duration, p float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[int(p*float64(len(d)-1))].Round(time.Millisecond)
	}
	fmt.Printf("events: %d, deliveries: %d, missed: %d; from the POST to the frame: p50 %s, p99 %s, max %s; first to last feed of an event: median %s, max %s\n",
		*events, len(lat), missed, pct(lat, 0.5), pct(lat, 0.99), pct(lat, 1), pct(spread, 0.5), pct(spread, 1))
	if len(lat) > 0 && cpu > 0 {
		fmt.Printf("server CPU while the events went out: %s, %.1f µs per delivery; server memory peak: %s\n",
			cpu.Round(time.Millisecond), float64(cpu.Microseconds())/float64(len(lat)), memory(*pid, "VmHWM"))
	}
	if *pprof != "" {
		if err := <-profiled; err != nil {
			fmt.Fprintln(os.Stderr, "fanout: the profile:", err)
		}
	}
	if missed > 0 {
		os.Exit(1)
	}
}

// profile saves a CPU profile of the server, taken over d.
func profile(addr, out string, d time.Duration) error {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds())))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	file, err := os.Create(out)
	if err != nil {
		return err
	}
	defer file.Close()
	_, err = io.Copy(file, resp.Body)
	return err
}

type fan struct {
	server, key string
	mu          sync.Mutex
	arrived     [][]time.Time // per feed, when each event's frame arrived
	received    atomic.Int64
}

// open starts n feeds and returns once each has answered 200.
func (f *fan) open(n, dialers int) error {
	client := &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: -1, DisableCompression: true, ResponseHeaderTimeout: time.Minute,
	}}
	sem := make(chan struct{}, dialers)
	errs := make(chan error, n)
	var ready sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		ready.Add(1)
		go func() {
			defer func() { <-sem }()
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, f.server+"/v1/events", nil)
			req.Header.Set("Authorization", "Bearer "+f.key)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := client.Do(req) //nolint:bodyclose // read closes it, when the feed ends
			if err == nil && resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				err = fmt.Errorf("feed %d: %s", i, resp.Status)
			}
			ready.Done()
			if err != nil {
				errs <- err
				return
			}
			go f.read(i, resp)
		}()
	}
	ready.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// read records when each `meta_response.completed` frame of feed i arrives (a background
// response is metered too, so its spend.recorded comes through the feed as well).
func (f *fan) read(i int, resp *http.Response) {
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var typ []byte
	for sc.Scan() {
		line := sc.Bytes()
		if t, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			typ = append(typ[:0], bytes.TrimSpace(t)...)
		}
		if bytes.HasPrefix(line, []byte("data:")) && string(typ) == "meta_response.completed" {
			now := time.Now()
			f.mu.Lock()
			f.arrived[i] = append(f.arrived[i], now)
			f.mu.Unlock()
			f.received.Add(1)
		}
	}
}

// background starts a background response: its completion is the event.
func (f *fan) background(model string, i int) error {
	body, _ := json.Marshal(map[string]any{"model": model, "input": fmt.Sprintf("event %d", i), "background": true})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, f.server+"/v1/responses", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST /v1/responses: %s", resp.Status)
	}
	return nil
}

// cpuTime is a process's user and system CPU time so far (/proc/PID/stat, in clock ticks of
// 10 ms), 0 without a pid.
func cpuTime(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if pid == 0 || err != nil {
		return 0
	}
	// The command name may hold spaces: the fields that follow start after its ')'.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	var utime, stime int64
	_, _ = fmt.Sscan(fields[11], &utime)
	_, _ = fmt.Sscan(fields[12], &stime)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// memory reads a field of /proc/PID/status ("VmRSS", "VmHWM").
func memory(pid int, field string) string {
	if pid == 0 {
		return "?"
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
