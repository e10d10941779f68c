package main

import (
	"bufio"
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// sample is one reading of the server's /metrics and of pg_stat_activity; NaN where the
// reading failed (PostgreSQL down: the connections).
type sample struct {
	t                                 float64 // seconds since the load began
	rss, heap, goroutines             float64 // heap: go_memstats_heap_inuse_bytes
	poolTotal, poolInUse, subscribers float64
	dbConns                           float64 // backends connected to the bench database
	ready                             int     // GET /ready's status (0: no answer)
}

var nan = math.NaN()

type sampler struct {
	metrics, dbURL, server string
	mu                     sync.Mutex
	samples                []sample
}

func (s *sampler) loop(ctx context.Context, begin time.Time, every time.Duration) {
	for i := 0; ; i++ {
		if w := time.Until(begin.Add(time.Duration(i) * every)); w > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(w):
			}
		}
		if ctx.Err() != nil {
			return
		}
		x := s.take(context.Background(), begin)
		s.mu.Lock()
		s.samples = append(s.samples, x)
		s.mu.Unlock()
	}
}

func (s *sampler) all() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...)
}

func (s *sampler) take(ctx context.Context, begin time.Time) sample {
	x := sample{t: time.Since(begin).Seconds(), rss: nan, heap: nan, goroutines: nan, poolTotal: nan, poolInUse: nan, subscribers: nan, dbConns: nan}
	client := &http.Client{Timeout: 5 * time.Second}
	if m, err := scrape(client, s.metrics+"/metrics"); err == nil {
		get := func(name string) float64 {
			if v, ok := m[name]; ok {
				return v
			}
			return nan
		}
		x.rss, x.goroutines = get("process_resident_memory_bytes"), get("go_goroutines")
		x.heap = get("go_memstats_heap_inuse_bytes")
		x.poolTotal, x.poolInUse = get("switchboard_db_pool_connections_total"), get("switchboard_db_pool_connections_in_use")
		x.subscribers = get("switchboard_sse_subscribers")
	}
	if resp, err := client.Get(s.server + "/ready"); err == nil {
		x.ready = resp.StatusCode
		resp.Body.Close()
	}
	_ = query(ctx, s.dbURL, func(c *pgx.Conn) error {
		var n int
		// Minus this connection.
		err := c.QueryRow(ctx, `SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = current_database()`).Scan(&n)
		if err == nil {
			x.dbConns = float64(n)
		}
		return err
	})
	return x
}

// scrape reads the unlabelled series of a Prometheus text page.
func scrape(client *http.Client, url string) (map[string]float64, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || strings.Contains(line, "{") {
			continue
		}
		name, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(strings.Fields(v)[0], 64); err == nil {
			m[name] = f
		}
	}
	return m, sc.Err()
}
