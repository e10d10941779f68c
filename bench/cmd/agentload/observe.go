package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// What a round cost, beside its req/s (docs/benchmarks.md, "Agent turns and webchat"): on a
// 2-core machine shared with other work, req/s swings with the neighbours, the CPU each
// process spends per request much less.
//
//   - -cpu server=PID,postgres=PID: each process's user and system time over a round
//     (benchkit.CPUWatch: /proc/PID/stat, its descendants included, PostgreSQL's backends with
//     the postmaster), divided by the round's requests, in microseconds.
//   - -pprof HOST:PORT (the server's PPROF_ADDR) with -out DIR: a CPU profile of the server
//     over each route's first round, DIR/cpu-ROUTE.pprof.
//   - -database-url URL with -out DIR, on a cluster that loads pg_stat_statements: the
//     statements of each route's first round, DIR/statements-ROUTE.txt, with their calls and
//     execution time per request.

// profileCPU fetches a CPU profile of d from the server's pprof address into file; the
// returned channel is closed when it is written (or failed, reported on stderr).
func profileCPU(addr string, d time.Duration, file string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		secs := max(1, int(d/time.Second))
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs))
		if err == nil {
			defer resp.Body.Close()
			var b []byte
			if b, err = io.ReadAll(resp.Body); err == nil {
				err = os.WriteFile(file, b, 0o644)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentload: profile:", err)
		}
	}()
	return done
}

// statements resets pg_stat_statements (when the database has it) and returns a function
// that writes what ran since, per request, into file.
func statements(ctx context.Context, dbURL, file string) func(requests int) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentload: statements:", err)
		return func(int) {}
	}
	_, err = conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
	if err == nil {
		_, err = conn.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentload: statements (is pg_stat_statements loaded?):", err)
		conn.Close(ctx)
		return func(int) {}
	}
	return func(requests int) {
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT calls, total_exec_time, rows, regexp_replace(query, '\s+', ' ', 'g')
			FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC`)
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentload: statements:", err)
			return
		}
		defer rows.Close()
		var b strings.Builder
		var calls, total float64
		fmt.Fprintf(&b, "%10s %12s %10s  %s\n", "calls/req", "ms/req", "ms/call", "statement")
		for rows.Next() {
			var n, r int64
			var ms float64
			var q string
			if err := rows.Scan(&n, &ms, &r, &q); err != nil {
				fmt.Fprintln(os.Stderr, "agentload: statements:", err)
				return
			}
			calls += float64(n)
			total += ms
			fmt.Fprintf(&b, "%10.2f %12.3f %10.3f  %.300s\n", float64(n)/float64(requests), ms/float64(requests), ms/float64(n), q)
		}
		head := fmt.Sprintf("%d requests; %.1f statements and %.2f ms of execution per request\n", requests, calls/float64(requests), total/float64(requests))
		if err := os.WriteFile(file, []byte(head+b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "agentload: statements:", err)
		}
		fmt.Fprintf(os.Stderr, "agentload: %s: %s", filepath.Base(file), head)
	}
}
