package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

// proxyCommand is `loadtest proxy -upstream URL [-addr HOST:PORT] [-addr-file F]`: a bare Go
// reverse proxy (net/http/httputil, nothing else: no authentication, no parsing, no
// database) in front of the mock. Scenario 7 measures it beside Portkey and Switchboard on
// the same request, so a run shows what a Go process that only forwards reaches on that
// machine, at the same time: the ceiling of any gateway written in Go there, in throughput
// and in tail latency.
func proxyCommand(args []string) {
	fs := flag.NewFlagSet("proxy", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	addrFile := fs.String("addr-file", "", "write the address listened on to this file")
	upstream := fs.String("upstream", "", "base URL to forward to (the mock)")
	_ = fs.Parse(args)
	target, err := url.Parse(*upstream)
	if *upstream == "" || err != nil || target.Host == "" {
		fmt.Fprintln(os.Stderr, "usage: loadtest proxy -upstream http://HOST:PORT [-addr HOST:PORT] [-addr-file F]")
		os.Exit(2)
	}
	ln := mustListen("proxy", *addr)
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(ln.Addr().String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest proxy:", err)
			os.Exit(1)
		}
	}
	srv := &http.Server{Handler: bareProxy(target), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintln(os.Stderr, "loadtest proxy:", srv.Serve(ln))
	os.Exit(1)
}

// mustListen listens on addr for the loadtest command cmd, or exits saying why not.
func mustListen(cmd, addr string) net.Listener {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadtest %s: %v\n", cmd, err)
		os.Exit(1)
	}
	return ln
}

// bareProxy forwards every request to upstream, keeping as many idle connections to it as
// Switchboard's vendor client does (256), so neither side pays for new connections.
func bareProxy(upstream *url.URL) http.Handler {
	p := httputil.NewSingleHostReverseProxy(upstream)
	p.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}
	return p
}
