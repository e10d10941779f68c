package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/bench/benchkit"
)

// route is one kind of request of the mix.
type route struct {
	name   string
	weight int
	// build is the request; sess is the route's pool of conversations (agent, embed).
	build func(r *rand.Rand, conv string) (url string, header http.Header, body []byte)
	// id reads what the answer gives to keep: the response's id (stored, background), the
	// conversation (agent) or visitor token (embed); "" for none.
	id func(body []byte) string
	// conversational routes continue a conversation of their pool for a few turns.
	conversational bool
}

// record is one answered (or failed) request.
type record struct {
	route   int
	due     time.Time // when the open loop scheduled it
	done    time.Time
	outcome outcome
	status  int
	id      string // from the answer (route.id)
	conv    string // the conversation it continued, "" for a new one
	errText string
}

// convPool hands out conversations to continue: a conversation gets turnsPerConversation
// turns, then a new one opens (a visitor who asks a few questions). Turns of one
// conversation never run at the same time (the pool holds each until its answer).
type convPool struct {
	mu   sync.Mutex
	free []convState
}

type convState struct {
	id    string
	turns int
}

const turnsPerConversation = 5

func (p *convPool) take() convState {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free = p.free[:n-1]
		return c
	}
	return convState{}
}

func (p *convPool) give(c convState, id string, ok bool) {
	if !ok || id == "" {
		return // the turn failed: the conversation is dropped, a new one opens
	}
	c.id = id
	c.turns++
	if c.turns >= turnsPerConversation {
		return
	}
	p.mu.Lock()
	p.free = append(p.free, c)
	p.mu.Unlock()
}

// routes are the mix's routes (routeNames' order): weights per 100 requests.
func routes(srv, key, agentModel, chatModel string, agent benchkit.Agent, c *benchkit.Corpus, w [nRoutes]int) []route {
	auth := func() http.Header {
		return http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + key}}
	}
	jsonBody := func(v any) []byte { b, _ := json.Marshal(v); return b }
	field := func(name string) func([]byte) string {
		return func(b []byte) string {
			var m map[string]any
			if json.Unmarshal(b, &m) != nil {
				return ""
			}
			s, _ := m[name].(string)
			return s
		}
	}
	return []route{
		{name: "ephemeral", weight: w[0],
			build: func(r *rand.Rand, _ string) (string, http.Header, []byte) {
				return srv + "/v1/chat/completions", auth(), jsonBody(map[string]any{"model": chatModel,
					"messages": []map[string]string{{"role": "user", "content": c.Query(r)}}})
			},
			id: func([]byte) string { return "" }},
		{name: "stored", weight: w[1],
			build: func(r *rand.Rand, _ string) (string, http.Header, []byte) {
				return srv + "/v1/responses", auth(), jsonBody(map[string]any{"model": chatModel, "input": c.Query(r)})
			},
			id: field("id")},
		{name: "agent", weight: w[2],
			build: func(r *rand.Rand, conv string) (string, http.Header, []byte) {
				body := map[string]any{"message": c.Query(r)}
				if conv != "" {
					body["conversation_id"] = conv
				}
				return srv + "/api/agents/" + agent.AgentID + "/chat", auth(), jsonBody(body)
			},
			id: field("conversation_id"), conversational: true},
		{name: "embed", weight: w[3],
			build: func(r *rand.Rand, conv string) (string, http.Header, []byte) {
				body := map[string]any{"message": c.Query(r)}
				if conv != "" {
					body["visitor_token"] = conv
				}
				h := http.Header{"Content-Type": {"application/json"}, "Origin": {"https://shop.bench.example"}}
				return srv + "/embed/" + agent.DeploymentID + "/chat", h, jsonBody(body)
			},
			id: field("visitor_token"), conversational: true},
		{name: "background", weight: w[4],
			build: func(r *rand.Rand, _ string) (string, http.Header, []byte) {
				return srv + "/v1/responses", auth(), jsonBody(map[string]any{"model": chatModel, "input": c.Query(r), "background": true})
			},
			id: field("id")},
	}
}

// openLoop sends requests at rate per second for d, due at start + i/rate whatever the
// answers (a fixed arrival rate: a slow server gets more requests in flight, not fewer
// requests), the route of each from the mix's sequence. Latency runs from when a request was
// due, so a late dispatch counts against the server's figures rather than hiding it. At most
// maxInflight at once: the rest are counted as not sent (the generator's cap).
func openLoop(ctx context.Context, client *http.Client, rts []route, rate float64, d time.Duration, maxInflight int, onRecord func(record)) (start time.Time, sent, skipped int) {
	weights := make([]int, len(rts))
	for i, r := range rts {
		weights[i] = r.weight
	}
	seq := mixSequence(weights)
	pools := make([]*convPool, len(rts))
	for i := range pools {
		pools[i] = &convPool{}
	}
	var inflight atomic.Int64
	var wg sync.WaitGroup
	start = time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= d || ctx.Err() != nil {
			break
		}
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		if inflight.Load() >= int64(maxInflight) {
			skipped++
			continue
		}
		ri := seq[i%len(seq)]
		sent++
		inflight.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer inflight.Add(-1)
			rnd := rand.New(rand.NewPCG(uint64(i), 48))
			pool := pools[ri]
			conv := convState{}
			if rts[ri].conversational {
				conv = pool.take()
			}
			url, header, body := rts[ri].build(rnd, conv.id)
			rec := send(ctx, client, url, header, body)
			rec.route, rec.due, rec.conv = ri, due, conv.id
			if rec.outcome == outOK {
				rec.id = rts[ri].id(rec.body)
			}
			rec.body = nil
			if rts[ri].conversational {
				pool.give(conv, rec.id, rec.outcome == outOK)
			}
			onRecord(rec.record)
		}()
	}
	wg.Wait()
	return start, sent, skipped
}

type answer struct {
	record
	body []byte
}

func send(ctx context.Context, client *http.Client, url string, header http.Header, body []byte) answer {
	var a answer
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		a.outcome, a.errText, a.done = outTransport, err.Error(), time.Now()
		return a
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		a.outcome, a.errText, a.done = outTransport, err.Error(), time.Now()
		return a
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	a.done = time.Now()
	a.status = resp.StatusCode
	a.outcome = classify(resp.StatusCode, bytes.Contains(b, []byte("database_unavailable")), resp.Header.Get("Retry-After") != "", err)
	if a.outcome != outOK {
		a.errText = fmt.Sprintf("%s: %.200s", resp.Status, b)
		if err != nil {
			a.errText = err.Error()
		}
	} else {
		a.body = b
	}
	return a
}

// feeds holds n event feeds (GET /v1/events) open until ctx ends, reopening a feed that
// ends from the last event id it read (after=), and counts the events, the reopenings and
// the gaps (an id more than one past the previous, on one feed).
type feeds struct {
	server, key          string
	events, reopen, gaps atomic.Int64
	failedOpens          atomic.Int64
	open                 atomic.Int64
	ended                atomic.Int64 // streams that ended (answered 200, then closed by the server)
	firstFail            atomic.Value // string: the first failed open's error
}

func (f *feeds) run(ctx context.Context, n int, after int64) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1, DisableCompression: true, ResponseHeaderTimeout: 30 * time.Second}}
	for range n {
		go func() {
			last := after
			first := true
			for ctx.Err() == nil {
				if !first {
					f.reopen.Add(1)
				}
				first = false
				// A second between reopenings, as an EventSource waits (retry) before it reconnects.
				if err := f.read(ctx, client, &last); err != nil && ctx.Err() == nil {
					f.failedOpens.Add(1)
					f.firstFail.CompareAndSwap(nil, err.Error())
				} else if ctx.Err() == nil {
					f.ended.Add(1)
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}()
	}
}

func (f *feeds) read(ctx context.Context, client *http.Client, last *int64) error {
	url := f.server + "/v1/events"
	if *last > 0 {
		url += "?after=" + strconv.FormatInt(*last, 10)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+f.key)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("feed: %s: %s", resp.Status, b)
	}
	f.open.Add(1)
	defer f.open.Add(-1)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id:"); ok {
			id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				if *last > 0 && id > *last+1 {
					f.gaps.Add(1)
				}
				if id > *last {
					*last = id
				}
			}
			f.events.Add(1)
		}
	}
	return nil
}
