package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"switchboard/metrics"
)

// sidePort is an optional listen address of its own beside ADDR, for operators only:
// METRICS_ADDR's Prometheus scrape, PPROF_ADDR's profiles. Neither is ever served on the
// public port. Each binds before background work starts (a port in use fails the start
// cleanly) and serves until the process ends, so the last scrape can see the drain.
type sidePort struct {
	variable, addr, what string
	handler              http.Handler
	writeTimeout         time.Duration
	ln                   net.Listener
	server               *http.Server
}

// sidePorts lists the side ports cfg asks for; m is nil unless METRICS_ADDR is set.
func sidePorts(cfg config, m *metrics.Metrics) []*sidePort {
	var ports []*sidePort
	if cfg.MetricsAddr != "" {
		ports = append(ports, &sidePort{variable: "METRICS_ADDR", addr: cfg.MetricsAddr, what: "metrics",
			handler: metricsMux(m.Handler()), writeTimeout: 30 * time.Second})
	}
	if cfg.PprofAddr != "" {
		// A CPU profile or an execution trace holds its answer for ?seconds= (30 by default;
		// net/http/pprof refuses a duration longer than the write timeout).
		ports = append(ports, &sidePort{variable: "PPROF_ADDR", addr: cfg.PprofAddr, what: "profiles",
			handler: pprofMux(), writeTimeout: 5 * time.Minute})
	}
	return ports
}

// listenSide binds every side port; on a failure it closes those already bound.
func listenSide(ports []*sidePort) error {
	for i, p := range ports {
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			closeSide(ports[:i])
			return listenError(p.variable, p.addr, err)
		}
		p.ln = ln
	}
	return nil
}

func closeSide(ports []*sidePort) {
	for _, p := range ports {
		if p.server != nil {
			p.server.Close()
		} else if p.ln != nil {
			p.ln.Close()
		}
	}
}

// serveSide serves every bound side port; an error other than the server's close goes to errc.
func serveSide(ports []*sidePort, errc chan<- error, log *slog.Logger) {
	for _, p := range ports {
		p.server = &http.Server{Handler: p.handler, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: p.writeTimeout}
		go func(p *sidePort) {
			if err := p.server.Serve(p.ln); !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s (%s): %w", p.what, p.variable, err)
			}
		}(p)
		log.Info("serving "+p.what, slog.String("addr", p.addr))
	}
}

// metricsMux serves GET /metrics only.
func metricsMux(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return mux
}

// pprofMux serves Go's runtime profiles under /debug/pprof/ (net/http/pprof): CPU
// (/debug/pprof/profile?seconds=N), heap, allocs, goroutine, threadcreate, execution trace.
// Mutex and block profiles are served but stay empty: their sampling costs every lock and
// channel operation, so it is left off (the in-process benchmarks turn it on,
// docs/benchmarks.md).
func pprofMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}
