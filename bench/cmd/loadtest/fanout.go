package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"switchboard/bench/benchkit"
)

// subscriber is one GET /v1/events client.
type subscriber struct {
	mu       sync.Mutex
	lat      []time.Duration // receive time - the event's created_at
	received int
	maxSeq   int64
	err      error
}

func (s *subscriber) run(ctx context.Context, client *http.Client, url, key string, connected chan<- error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
		resp.Body.Close()
	}
	connected <- err
	if err != nil {
		s.err = err
		return
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		now := time.Now()
		switch {
		case bytes.HasPrefix(line, []byte("id: ")):
			seq, _ := strconv.ParseInt(string(bytes.TrimSpace(line[4:])), 10, 64)
			s.mu.Lock()
			s.maxSeq = max(s.maxSeq, seq)
			s.mu.Unlock()
		case bytes.HasPrefix(line, []byte("data: ")):
			if t, ok := benchkit.CreatedAt(line); ok {
				s.mu.Lock()
				s.lat = append(s.lat, now.Sub(t))
				s.received++
				s.mu.Unlock()
			}
		}
		if err == bufio.ErrBufferFull {
			// an envelope longer than the buffer: skip the rest of the line
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				s.err = err
			}
			return
		}
	}
}

type fanoutResult struct {
	latency   *sample
	turns     *sample
	events    int64 // events produced during the run
	delivered int
	missing   int
	connectIn time.Duration
}

// fanout connects n subscribers to the workspace's event feed, produces events with ephemeral
// turns at turnRate for d, and measures how long each event takes from its creation (its
// `created_at`, taken in the committing transaction) to each subscriber.
func fanout(serverURL, key string, n, turnRate int, d time.Duration, turn target, eventCount func() (int64, error)) (fanoutResult, error) {
	client := streamClient(n)
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	subs := make([]*subscriber, n)
	connected := make(chan error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range subs {
		subs[i] = &subscriber{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			subs[i].run(ctx, client, serverURL+"/v1/events", key, connected)
		}()
		if i%50 == 49 {
			time.Sleep(5 * time.Millisecond) // do not open a thousand sockets in one instant
		}
	}
	var res fanoutResult
	timeout := time.After(60 * time.Second)
	for range n {
		select {
		case err := <-connected:
			if err != nil {
				cancel()
				wg.Wait()
				return res, fmt.Errorf("subscriber: %w", err)
			}
		case <-timeout:
			cancel()
			wg.Wait()
			return res, fmt.Errorf("subscribers did not all connect in 60 s")
		}
	}
	res.connectIn = time.Since(start)

	res.turns = openLoop(turn, turnRate, d)
	// The workspace is new: its cursor is the number of events the turns committed, once the
	// ones written behind the answers are in.
	events, err := settledCount(eventCount, 500*time.Millisecond, 10*time.Second)
	if err != nil {
		cancel()
		wg.Wait()
		return res, err
	}

	// Every subscriber must see every event: wait (bounded) for the last ones.
	deadline := time.Now().Add(10 * time.Second)
	for {
		done := true
		for _, s := range subs {
			s.mu.Lock()
			if int64(s.received) < events && s.err == nil {
				done = false
			}
			s.mu.Unlock()
		}
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	res.events = events
	res.latency = &sample{elapsed: d}
	for _, s := range subs {
		res.latency.lat = append(res.latency.lat, s.lat...)
		res.latency.ok += s.received
		res.delivered += s.received
		if miss := int(res.events) - s.received; miss > 0 {
			res.missing += miss
		}
	}
	if res.missing > 0 {
		res.latency.errs = res.missing
		res.latency.firstErr = fmt.Sprintf("%d event deliveries missing", res.missing)
		res.latency.errKinds = map[string]int{res.latency.firstErr: 1}
	}
	res.latency.finish()
	return res, nil
}
