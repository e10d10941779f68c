// Command fakecarrier is the SMS carrier of `bench/run.sh sms`: the fake of sms/smstest (the
// one the server's own tests use, so the REST API answers exactly as the SDK expects) run as
// a process of its own, with the account holding -number, plus what a benchmark needs around
// it:
//
//   - every SMS the server sends is stamped with the time the fake first saw it (it looks
//     every -poll, so a stamp is up to that late);
//   - with -status-callbacks, each one is reported "delivered" -status-delay later to its
//     StatusCallback, signed as the carrier signs, as a real carrier does (that traffic is
//     part of the load of a replica);
//   - GET /messages on -stats-addr lists the SMS sent (sid, from, to, body, at), GET /stats
//     counts them, and the status callbacks and their failures.
//
// The REST API listens on smstest's own address (written to -addr-file); the listing on
// -stats-addr (written to -stats-addr-file). smstest.New takes a testing.TB for its cleanup,
// which this process gives it through a small shim (tb) that runs the cleanups at exit.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"switchboard/sms/smstest"
)

// tb is the testing.TB smstest.New needs: it only registers a cleanup (and would report a
// failure); any other method of the embedded nil TB panics, which smstest.New does not call.
type tb struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

func (t *tb) Helper()                           {}
func (t *tb) Fatalf(format string, args ...any) { log.Fatalf("fakecarrier: "+format, args...) }
func (t *tb) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *tb) cleanup() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// sent is an SMS the server sent, as /messages lists it.
type sent struct {
	SID            string    `json:"sid"`
	From           string    `json:"from"`
	To             string    `json:"to"`
	Body           string    `json:"body"`
	At             time.Time `json:"at"`
	statusCallback string
}

type carrier struct {
	fake     *smstest.Server
	client   *http.Client
	callback bool
	delay    time.Duration

	mu   sync.Mutex
	seen []sent

	callbacks, callbackErrors atomic.Int64
}

func main() {
	var numbers string
	addrFile := flag.String("addr-file", "", "write the REST API's address (host:port) to this file")
	statsAddr := flag.String("stats-addr", "127.0.0.1:0", "listen address of /messages and /stats")
	statsAddrFile := flag.String("stats-addr-file", "", "write the address of /messages and /stats to this file")
	flag.StringVar(&numbers, "number", "+14155550100", "comma-separated E.164 numbers the account holds")
	poll := flag.Duration("poll", 200*time.Millisecond, "how often sent SMS are looked for (their time stamps are up to this late)")
	callbacks := flag.Bool("status-callbacks", true, "report each SMS delivered to its StatusCallback, signed")
	statusDelay := flag.Duration("status-delay", time.Second, "how long after it is seen an SMS is reported delivered")
	sendDelay := flag.Duration("send-delay", 0, "how long the REST API takes to accept an SMS")
	flag.Parse()

	t := &tb{}
	defer t.cleanup()
	fake := smstest.New(t)
	for _, n := range strings.Split(numbers, ",") {
		fake.AddNumber(strings.TrimSpace(n))
	}
	fake.SetDelay(*sendDelay)
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(strings.TrimPrefix(fake.URL, "http://")+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	c := &carrier{fake: fake, callback: *callbacks, delay: *statusDelay,
		client: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}

	ln, err := net.Listen("tcp", *statsAddr)
	if err != nil {
		log.Fatal(err)
	}
	if *statsAddrFile != "" {
		if err := os.WriteFile(*statsAddrFile, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.watch(ctx, *poll)
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /messages", c.messages)
	mux.HandleFunc("GET /stats", c.stats)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "fakecarrier: REST API on %s (account %s), numbers %s, listing on %s\n", fake.URL, smstest.AccountSID, numbers, ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	wg.Wait()
	b, _ := json.Marshal(c.counts())
	fmt.Fprintf(os.Stderr, "fakecarrier: %s\n", b)
}

// watch stamps the SMS sent since it last looked, and schedules their status callbacks.
func (c *carrier) watch(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		all := c.fake.Messages()
		now := time.Now()
		c.mu.Lock()
		fresh := make([]sent, 0, len(all)-len(c.seen))
		for _, m := range all[len(c.seen):] {
			s := sent{SID: m.SID, From: m.From, To: m.To, Body: m.Body, At: now, statusCallback: m.StatusCallback}
			fresh = append(fresh, s)
			c.seen = append(c.seen, s)
		}
		c.mu.Unlock()
		if !c.callback {
			continue
		}
		for _, s := range fresh {
			if s.statusCallback == "" {
				continue
			}
			wg.Add(1)
			time.AfterFunc(c.delay, func() {
				defer wg.Done()
				c.report(ctx, s)
			})
		}
	}
}

// report posts the delivery report of s, as the carrier does.
func (c *carrier) report(ctx context.Context, s sent) {
	form := smstest.StatusForm(s.SID, "delivered", s.From, s.To)
	resp, err := smstest.PostWithSignature(ctx, c.client, s.statusCallback, form, smstest.SignWith(smstest.AuthToken, s.statusCallback, form))
	c.callbacks.Add(1)
	if err != nil {
		c.callbackErrors.Add(1)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.callbackErrors.Add(1)
	}
}

func (c *carrier) messages(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	list := append([]sent(nil), c.seen...)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func (c *carrier) counts() map[string]any {
	c.mu.Lock()
	n := len(c.seen)
	var last time.Time
	if n > 0 {
		last = c.seen[n-1].At
	}
	c.mu.Unlock()
	return map[string]any{"messages": n, "last_at": last, "status_callbacks": c.callbacks.Load(), "status_callback_errors": c.callbackErrors.Load()}
}

func (c *carrier) stats(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(c.counts())
}
