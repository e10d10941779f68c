package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"
)

// kind is one of the measured routes. Each client of a closed loop holds a session: next
// builds its request from the session, done reads the answer into it.
type kind struct {
	name   string
	next   func(s *session) (url string, header http.Header, body []byte)
	done   func(s *session, body []byte) error
	target *target
}

// session is one client's conversation: continued for turnsPerConversation turns, then a
// new one (a visitor who asks a few questions), with its own random queries.
type session struct {
	rnd   *rand.Rand
	conv  string // conversation_id (agent chat) or visitor_token (embed)
	turns int
}

const turnsPerConversation = 5

func (s *session) advance(id string) {
	s.turns++
	s.conv = id
	if s.turns >= turnsPerConversation {
		s.conv, s.turns = "", 0
	}
}

// round is one closed-loop run of a kind.
type round struct {
	ok, failed int
	late       int // answered after the end: not counted in the rate, but their vendor calls were made
	elapsed    time.Duration
	lat        []time.Duration // of the successful requests, sorted
	firstErr   string
	cpu        map[string]float64 // µs of CPU per request, per watched process (-cpu)
}

func (r round) rate() float64 { return float64(r.ok) / r.elapsed.Seconds() }

func (r round) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[int(p*float64(len(r.lat)-1)+0.5)]
}

// closedLoop runs clients that each send their next request when the previous one is
// answered, for d; requests still in flight at the end are waited for and not counted.
func closedLoop(ctx context.Context, client *http.Client, k kind, sessions []*session, d time.Duration) round {
	var mu sync.Mutex
	var r round
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(d)
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			ok, failed, late, firstErr := 0, 0, 0, ""
			for time.Now().Before(stop) && ctx.Err() == nil {
				t0 := time.Now()
				err := send(ctx, client, k, s)
				took := time.Since(t0)
				if time.Now().After(stop) {
					late++
					break
				}
				if err != nil {
					failed++
					if firstErr == "" {
						firstErr = err.Error()
					}
					s.conv, s.turns = "", 0
					continue
				}
				ok++
				lat = append(lat, took)
			}
			mu.Lock()
			r.ok += ok
			r.failed += failed
			r.late += late
			r.lat = append(r.lat, lat...)
			if r.firstErr == "" {
				r.firstErr = firstErr
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.elapsed = d
	slices.Sort(r.lat)
	return r
}

func send(ctx context.Context, client *http.Client, k kind, s *session) error {
	url, header, body := k.next(s)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %.300s", k.name, resp.Status, b)
	}
	return k.done(s, b)
}

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
