package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// streamClient holds many concurrent streams: one connection each, no pooling limit.
func streamClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns: conns + 16, MaxIdleConnsPerHost: conns + 16, DisableCompression: true,
		IdleConnTimeout: 90 * time.Second,
	}}
}

// streamTiming is one stream as the client saw it: when each content frame arrived.
type streamTiming struct {
	ttft time.Duration   // request sent -> first content frame
	gaps []time.Duration // between consecutive content frames
	tail time.Duration   // last content frame -> end of the stream (finish, usage, [DONE])
	err  error
}

// streamOnce posts t and reads the SSE answer to its end, timing every `data:` line that
// contains marker (a content delta). wantChunks content frames must arrive.
func streamOnce(ctx context.Context, client *http.Client, t target, marker []byte, wantChunks int) streamTiming {
	req, err := http.NewRequestWithContext(ctx, t.method, t.url, bytes.NewReader(t.body))
	if err != nil {
		return streamTiming{err: err}
	}
	req.Header = t.header.Clone()
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return streamTiming{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return streamTiming{err: fmt.Errorf("status %d", resp.StatusCode)}
	}
	br := bufio.NewReaderSize(resp.Body, 32<<10)
	var st streamTiming
	var last time.Time
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 5 && bytes.HasPrefix(line, []byte("data:")) && bytes.Contains(line, marker) {
			now := time.Now()
			if n == 0 {
				st.ttft = now.Sub(start)
			} else {
				st.gaps = append(st.gaps, now.Sub(last))
			}
			last = now
			n++
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err.Error() != "EOF" {
				st.err = err
			}
			break
		}
	}
	st.tail = time.Since(last)
	if st.err == nil && n != wantChunks {
		st.err = fmt.Errorf("%d content frames, want %d", n, wantChunks)
	}
	return st
}

// streamLoop keeps `clients` streams going back to back for d and returns the time to first
// token and the inter-chunk gaps.
func streamLoop(t target, marker []byte, chunks, clients int, d time.Duration) (ttft, gaps, tails *sample) {
	client := streamClient(clients)
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	deadline := time.Now().Add(d)
	var mu sync.Mutex
	ttft, gaps, tails = &sample{}, &sample{}, &sample{}
	var wg sync.WaitGroup
	begin := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				st := streamOnce(ctx, client, t, marker, chunks)
				mu.Lock()
				if st.err != nil {
					ttft.fail(st.err.Error())
				} else {
					ttft.add(st.ttft)
					tails.add(st.tail)
					for _, g := range st.gaps {
						gaps.add(g)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	ttft.elapsed = time.Since(begin)
	gaps.elapsed, tails.elapsed = ttft.elapsed, ttft.elapsed
	return ttft.finish(), gaps.finish(), tails.finish()
}

// heldResult is the outcome of holding many long streams open at once.
type heldResult struct {
	ttft, gaps, tails *sample
	peak              int64 // most streams open at the same time
	gapStalls         int   // gaps between tokens of at least twice the vendor's interval
	tailStalls        int   // streams whose end came at least twice the interval after their last token
	completed         int
}

// holdStreams opens n long streams over the ramp and reads them all to their end.
func holdStreams(t target, marker []byte, chunks, n int, ramp, interval time.Duration, timeout time.Duration) heldResult {
	client := streamClient(n)
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var open, peak atomic.Int64
	var mu sync.Mutex
	res := heldResult{ttft: &sample{}, gaps: &sample{}, tails: &sample{}}
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * ramp / time.Duration(n))
			cur := open.Add(1)
			for {
				p := peak.Load()
				if cur <= p || peak.CompareAndSwap(p, cur) {
					break
				}
			}
			st := streamOnce(ctx, client, t, marker, chunks)
			open.Add(-1)
			mu.Lock()
			defer mu.Unlock()
			if st.err != nil {
				res.ttft.fail(st.err.Error())
				return
			}
			res.completed++
			res.ttft.add(st.ttft)
			res.tails.add(st.tail)
			if st.tail >= 2*interval {
				res.tailStalls++
			}
			for _, g := range st.gaps {
				res.gaps.add(g)
				if g >= 2*interval {
					res.gapStalls++
				}
			}
		}()
	}
	wg.Wait()
	res.ttft.elapsed = time.Since(begin)
	res.gaps.elapsed = res.ttft.elapsed
	res.peak = peak.Load()
	res.ttft.finish()
	res.gaps.finish()
	res.tails.finish()
	return res
}
