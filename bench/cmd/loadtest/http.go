package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// target is one request, replayed as is.
type target struct {
	method, url string
	header      http.Header
	body        []byte
	// expect, when set, must appear in a successful response body (a 200 with the wrong body
	// is an error).
	expect []byte
}

func (t target) vegeta() vegeta.Target {
	return vegeta.Target{Method: t.method, URL: t.url, Header: t.header.Clone(), Body: t.body}
}

func jsonTarget(url, key string, body any) target {
	raw, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return target{method: http.MethodPost, url: url, header: h, body: raw}
}

// captured reads a request the mock recorded (mockllm -capture): the exact request the
// server sends to its vendor, to replay it directly against the mock.
func captured(dir, name, mockURL string) (target, error) {
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return target{}, fmt.Errorf("captured vendor request: %w (did the warm-up turn reach the mock?)", err)
	}
	var rec struct {
		Method string            `json:"method"`
		Path   string            `json:"path"`
		Header map[string]string `json:"header"`
		Body   string            `json:"body"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return target{}, fmt.Errorf("%s: %w", name, err)
	}
	h := http.Header{}
	for k, v := range rec.Header {
		h.Set(k, v)
	}
	return target{method: rec.Method, url: mockURL + rec.Path, header: h, body: []byte(rec.Body)}, nil
}

// attack runs one vegeta attack and collects its results. rate 0 is a closed loop of exactly
// `workers` clients sending back to back; a positive rate is an open loop at that constant
// arrival rate, with at most maxWorkers requests in flight (beyond that the attack falls behind
// the schedule, which shows as a rate below the one offered).
func attack(t target, rate, workers int, maxWorkers int, d time.Duration) *sample {
	return attackTargets([]vegeta.Target{t.vegeta()}, t.expect, rate, workers, maxWorkers, d)
}

// attackTargets is attack over several targets, taken round-robin.
func attackTargets(targets []vegeta.Target, expect []byte, rate, workers int, maxWorkers int, d time.Duration) *sample {
	opts := []func(*vegeta.Attacker){
		vegeta.Workers(uint64(workers)), vegeta.MaxWorkers(uint64(maxWorkers)),
		vegeta.Timeout(15 * time.Second), vegeta.KeepAlive(true), vegeta.Connections(maxWorkers + 16),
		vegeta.Redirects(-1), vegeta.MaxBody(-1),
	}
	atk := vegeta.NewAttacker(opts...)
	pacer := vegeta.ConstantPacer{Freq: rate, Per: time.Second}
	s := &sample{}
	var first, last time.Time
	for res := range atk.Attack(vegeta.NewStaticTargeter(targets...), pacer, d, "") {
		end := res.Timestamp.Add(res.Latency)
		if first.IsZero() || res.Timestamp.Before(first) {
			first = res.Timestamp
		}
		if end.After(last) {
			last = end
		}
		switch {
		case res.Error != "":
			s.fail(res.Error)
		case res.Code != http.StatusOK:
			s.fail(fmt.Sprintf("status %d", res.Code))
		case expect != nil && !bytes.Contains(res.Body, expect):
			s.fail("unexpected body: " + string(res.Body[:min(len(res.Body), 80)]))
		default:
			s.add(res.Latency)
		}
		res.Body = nil
	}
	s.elapsed = last.Sub(first)
	return s.finish()
}

func closedLoop(t target, clients int, d time.Duration) *sample {
	return attack(t, 0, clients, clients, d)
}

func openLoop(t target, rate int, d time.Duration) *sample {
	return attack(t, rate, 64, 2048, d)
}

// once sends one request and returns the body, failing on anything but a 2xx.
func once(client *http.Client, t target) ([]byte, error) {
	req, err := http.NewRequest(t.method, t.url, bytes.NewReader(t.body))
	if err != nil {
		return nil, err
	}
	req.Header = t.header.Clone()
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	if resp.StatusCode/100 != 2 {
		return b.Bytes(), fmt.Errorf("%s %s: status %d: %s", t.method, t.url, resp.StatusCode, b.String())
	}
	return b.Bytes(), err
}
