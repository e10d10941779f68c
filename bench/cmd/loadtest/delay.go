package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// delayCommand is `loadtest delay -target HOST:PORT -delay D [-addr HOST:PORT]`: a TCP
// forwarder that holds every chunk it reads for D before writing it on, in each direction,
// so that a server pointed at it sees its database (or any peer) as across a network: a
// round trip takes about 2×D more. On one machine PostgreSQL answers in about 0.1 ms; what
// holds a lock over a round trip behaves differently at a network's 1–3 ms
// (docs/benchmarks.md, issue 17, thirteenth pass).
func delayCommand(args []string) {
	fs := flag.NewFlagSet("delay", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	target := fs.String("target", "", "address to forward to")
	delay := fs.Duration("delay", time.Millisecond, "added to each direction (at least about 1 ms: the runtime's timers)")
	_ = fs.Parse(args)
	if *target == "" || *delay < 0 {
		fmt.Fprintln(os.Stderr, "usage: loadtest delay -target HOST:PORT -delay D [-addr HOST:PORT]")
		os.Exit(2)
	}
	ln := mustListen("delay", *addr)
	fmt.Fprintf(os.Stderr, "loadtest delay: %s -> %s, %s each way\n", ln.Addr(), *target, *delay)
	fmt.Fprintln(os.Stderr, "loadtest delay:", serveDelayed(ln, *target, *delay))
	os.Exit(1)
}

// serveDelayed forwards every connection ln accepts to target, delaying both directions.
func serveDelayed(ln net.Listener, target string, delay time.Duration) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer u.Close()
			done := make(chan struct{})
			go func() { delayed(u, c, delay); close(done) }()
			delayed(c, u, delay)
			<-done
		}()
	}
}

// chunk is what one read returned, and when.
type chunk struct {
	at   time.Time
	data []byte
}

// delayed copies src to dst, each chunk written delay after it was read (the reads go on
// meanwhile, so a stream keeps its rate), then half-closes dst when src ends.
func delayed(dst, src net.Conn, delay time.Duration) {
	queue := make(chan chunk, 1024)
	go func() {
		defer close(queue)
		for {
			b := make([]byte, 64<<10)
			n, err := src.Read(b)
			if n > 0 {
				queue <- chunk{time.Now(), b[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	// The runtime's timers: a sleep costs nothing while it waits, unlike a thread of its own
	// in nanosleep per direction (that cost about 180 µs of CPU per stored turn, on the
	// machine being measured), but they wake up to about a millisecond late: the delay of a
	// chunk is at least D and about 1 ms at least, so measure the round trip it makes
	// (psql's \timing of SELECT 1) rather than trusting D.
	for c := range queue {
		if d := time.Until(c.at.Add(delay)); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, src) // drain, so the reader ends
}
