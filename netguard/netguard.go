// Package netguard keeps outbound requests that users can aim (webhooks, crawls) away from
// the inside of the network. A URL is checked when it is registered, and the same rule is
// enforced again on the address actually dialled, so a DNS answer that changes between the
// check and the request (rebinding) cannot reach a private address.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// Guard applies the policy. AllowPrivate (WEBHOOK_ALLOW_PRIVATE=1) lifts it for local testing.
type Guard struct {
	AllowPrivate bool
	Resolver     *net.Resolver
}

// ErrBlocked is wrapped by every refusal.
var ErrBlocked = errors.New("address not allowed")

var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),         // "this network", unspecified
	netip.MustParsePrefix("10.0.0.0/8"),        // private
	netip.MustParsePrefix("100.64.0.0/10"),     // carrier-grade NAT
	netip.MustParsePrefix("127.0.0.0/8"),       // loopback
	netip.MustParsePrefix("169.254.0.0/16"),    // link-local, cloud metadata (169.254.169.254)
	netip.MustParsePrefix("172.16.0.0/12"),     // private
	netip.MustParsePrefix("192.0.0.0/24"),      // IETF protocol assignments
	netip.MustParsePrefix("192.168.0.0/16"),    // private
	netip.MustParsePrefix("198.18.0.0/15"),     // benchmarking
	netip.MustParsePrefix("224.0.0.0/4"),       // multicast
	netip.MustParsePrefix("240.0.0.0/4"),       // reserved, broadcast
	netip.MustParsePrefix("::/128"),            // unspecified
	netip.MustParsePrefix("::1/128"),           // loopback
	netip.MustParsePrefix("fc00::/7"),          // unique local
	netip.MustParsePrefix("fe80::/10"),         // link-local
	netip.MustParsePrefix("ff00::/8"),          // multicast
	netip.MustParsePrefix("fd00:ec2::254/128"), // cloud metadata over IPv6
	netip.MustParsePrefix("64:ff9b::/96"),      // NAT64 can embed any IPv4 address
	netip.MustParsePrefix("2002::/16"),         // 6to4 can embed any IPv4 address
}

// Allowed reports whether an address may be dialled.
func Allowed(addr netip.Addr) bool {
	addr = addr.Unmap() // ::ffff:10.0.0.1 is 10.0.0.1
	for _, p := range blocked {
		if p.Contains(addr) {
			return false
		}
	}
	return addr.IsValid()
}

// CheckURL validates a user-given URL: https (or http too when private addresses are
// allowed), a host, and every address it resolves to allowed.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: %q is not an absolute URL", ErrBlocked, raw)
	}
	if u.User != nil {
		return fmt.Errorf("%w: URLs with credentials are not accepted", ErrBlocked)
	}
	if u.Scheme != "https" && !(g.AllowPrivate && u.Scheme == "http") {
		return fmt.Errorf("%w: the URL must use https", ErrBlocked)
	}
	if g.AllowPrivate {
		return nil
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		if !Allowed(addr) {
			return fmt.Errorf("%w: %s is a private, loopback, link-local or metadata address", ErrBlocked, host)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := g.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("%w: the host %q does not resolve", ErrBlocked, host)
	}
	for _, a := range addrs {
		if !Allowed(a) {
			return fmt.Errorf("%w: %s resolves to %s, a private, loopback, link-local or metadata address", ErrBlocked, host, a.Unmap())
		}
	}
	return nil
}

func (g Guard) resolver() *net.Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

// Control is a net.Dialer Control hook refusing connections to blocked addresses; it sees the
// address actually being dialled, after DNS resolution.
func (g Guard) Control(_, address string, _ syscall.RawConn) error {
	if g.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlocked, address)
	}
	if !Allowed(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrBlocked, ap.Addr().Unmap())
	}
	return nil
}

// Client is an HTTP client whose every connection goes through Control, that does not use
// proxies from the environment, and that never follows redirects (a redirect could point
// inside, and a webhook receiver has no reason to redirect).
func (g Guard) Client(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: g.Control}
	transport := &http.Transport{
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Timeout:       timeout,
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
