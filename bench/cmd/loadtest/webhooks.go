package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// receiver is a webhook endpoint that checks every delivery's Standard Webhooks signature.
type receiver struct {
	secret []byte

	mu        sync.Mutex
	seen      map[string]bool
	first     time.Time
	last      time.Time
	lag       *sample // arrival - the event's created_at
	dupes     int
	badSig    int
	malformed int
}

func newReceiver() *receiver { return &receiver{seen: map[string]bool{}, lag: &sample{}} }

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/hook" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id, ts, sig := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature")
	mac := hmac.New(sha256.New, rc.secret)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	valid := false
	for _, s := range strings.Fields(sig) {
		if hmac.Equal([]byte(s), []byte(want)) {
			valid = true
		}
	}
	created, okTime := createdAt(body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch {
	case !valid:
		rc.badSig++
		w.WriteHeader(http.StatusUnauthorized) // a real receiver refuses it; the server will retry
		return
	case !okTime:
		rc.malformed++
	case rc.seen[id]:
		rc.dupes++
	default:
		rc.seen[id] = true
		if rc.first.IsZero() {
			rc.first = now
		}
		rc.last = now
		rc.lag.add(now.Sub(created))
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen)
}

type webhookResult struct {
	turns      *sample
	events     int64
	delivered  int
	rate       float64 // unique signed deliveries per second, first to last
	lag        *sample
	badSig     int
	dupes      int
	window     time.Duration
	generation time.Duration
}

// webhooks registers a receiver, runs `turns` ephemeral turns with `clients` clients (each
// turn commits two events), and measures the signed deliveries until every event arrived or
// the timeout.
func webhooks(serverURL, key string, turns, clients int, timeout time.Duration, turn target, eventCount func() (int64, error)) (webhookResult, error) {
	var res webhookResult
	rc := newReceiver()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	body, err := once(http.DefaultClient, jsonTarget(serverURL+"/v1/webhooks", key,
		map[string]any{"url": "http://" + ln.Addr().String() + "/hook", "description": "bench receiver"}))
	if err != nil {
		return res, fmt.Errorf("register the webhook: %w", err)
	}
	var ep struct {
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(body, &ep); err != nil || !strings.HasPrefix(ep.Secret, "whsec_") {
		return res, fmt.Errorf("webhook creation answered %s", body)
	}
	if rc.secret, err = base64.StdEncoding.DecodeString(strings.TrimPrefix(ep.Secret, "whsec_")); err != nil {
		return res, err
	}

	// A closed loop of `clients` clients, stopped after exactly `turns` turns.
	atk := vegeta.NewAttacker(vegeta.Workers(uint64(clients)), vegeta.MaxWorkers(uint64(clients)),
		vegeta.Timeout(15*time.Second), vegeta.KeepAlive(true), vegeta.Connections(clients+16))
	res.turns = &sample{}
	begin := time.Now()
	for r := range atk.Attack(vegeta.NewStaticTargeter(turn.vegeta()), countPacer(turns), 10*time.Minute, "") {
		if r.Error != "" || r.Code != http.StatusOK {
			res.turns.fail(fmt.Sprintf("status %d %s", r.Code, r.Error))
		} else {
			res.turns.add(r.Latency)
		}
	}
	res.generation = time.Since(begin)
	res.turns.elapsed = res.generation
	res.turns.finish()
	if res.events, err = eventCount(); err != nil {
		return res, err
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for rc.count() < int(res.events) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	res.delivered = len(rc.seen)
	res.window = rc.last.Sub(rc.first)
	if res.window > 0 {
		res.rate = float64(res.delivered) / res.window.Seconds()
	}
	res.lag = rc.lag
	res.lag.elapsed = res.window
	if miss := int(res.events) - res.delivered; miss > 0 {
		res.lag.fail(fmt.Sprintf("%d of %d events not delivered within %s", miss, res.events, timeout))
		res.lag.errs = miss
	}
	if rc.badSig > 0 {
		res.lag.fail(fmt.Sprintf("%d deliveries with a bad signature", rc.badSig))
		res.lag.errs += rc.badSig - 1
	}
	res.badSig, res.dupes = rc.badSig, rc.dupes
	res.lag.finish()
	return res, nil
}

// countPacer sends as fast as the clients allow and stops after that many requests.
type countPacer uint64

func (n countPacer) Pace(_ time.Duration, hits uint64) (time.Duration, bool) {
	return 0, hits >= uint64(n)
}

func (countPacer) Rate(time.Duration) float64 { return 0 }
