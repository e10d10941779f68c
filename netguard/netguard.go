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
	"strings"
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

// The policy is written over the IANA special-purpose address registries
// (https://www.iana.org/assignments/iana-ipv4-special-registry,
// https://www.iana.org/assignments/iana-ipv6-special-registry) and RFC 6890: a user-aimed
// request may reach a globally routable unicast address and nothing else.

// blocked4 are the IPv4 ranges refused; everything else is public unicast.
var blocked4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network", unspecified
	netip.MustParsePrefix("10.0.0.0/8"),      // private
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT (shared address space)
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local, cloud metadata (169.254.169.254)
	netip.MustParsePrefix("172.16.0.0/12"),   // private
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments (DS-Lite, NAT64 discovery, ...)
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast (deprecated, RFC 7526)
	netip.MustParsePrefix("192.168.0.0/16"),  // private
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and 255.255.255.255 broadcast
}

var (
	// globalUnicast6 is the only IPv6 space IANA allocates for global unicast: loopback,
	// unspecified, IPv4-compatible (::/96), link-local, site-local, unique local, multicast,
	// discard-only (100::/64), SRv6 (5f00::/16) and the rest of the reserved space are outside.
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	// nat64 (RFC 6052's well-known prefix) and sixToFour (RFC 3056) embed an IPv4 address,
	// which is what the packet finally reaches: they are judged by it.
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// blocked6 are the special-purpose ranges inside 2000::/3.
var blocked6 = []netip.Prefix{
	netip.MustParsePrefix("2001::/23"),     // IETF protocol assignments: Teredo (which embeds IPv4), benchmarking, ORCHID, ...
	netip.MustParsePrefix("2001:db8::/32"), // documentation
	netip.MustParsePrefix("3fff::/20"),     // documentation (RFC 9637)
}

// Allowed reports whether an address may be dialled. An address with a zone (fe80::1%eth0,
// ::1%lo) is never allowed: a zone only means something on a local link, and netip's
// prefixes do not contain zoned addresses, so a zone would otherwise slip past every range.
func Allowed(addr netip.Addr) bool {
	if !addr.IsValid() || addr.Zone() != "" {
		return false
	}
	addr = addr.Unmap() // ::ffff:10.0.0.1 is 10.0.0.1
	if addr.Is4() {
		return allowed4(addr)
	}
	b := addr.As16()
	switch {
	case nat64.Contains(addr):
		return allowed4(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(addr):
		return allowed4(netip.AddrFrom4([4]byte(b[2:6])))
	case !globalUnicast6.Contains(addr):
		return false
	}
	for _, p := range blocked6 {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

func allowed4(addr netip.Addr) bool {
	for _, p := range blocked4 {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// CheckURL validates a user-given URL: https (or http too when private addresses are
// allowed), a host, and every address it resolves to allowed. Some spellings are refused
// whatever they point at: an IPv6 zone (https://[fe80::1%25eth0]/), and a host whose last
// label is a number but that is not a canonical dotted-quad IPv4 address (2130706433,
// 0x7f.1, 0177.0.0.1, 127.1): C resolvers and browsers read those as IPv4 addresses, and
// no real domain ends in a number.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%w: %q is not an absolute URL", ErrBlocked, raw)
	}
	if u.User != nil {
		return fmt.Errorf("%w: URLs with credentials are not accepted", ErrBlocked)
	}
	if u.Scheme != "https" && !(g.AllowPrivate && u.Scheme == "http") {
		return fmt.Errorf("%w: the URL must use https", ErrBlocked)
	}
	host := u.Hostname()
	addr, literalErr := netip.ParseAddr(host)
	switch {
	case strings.Contains(host, "%"):
		return fmt.Errorf("%w: IPv6 zone identifiers (%s) are not accepted", ErrBlocked, host)
	case literalErr != nil && strings.Contains(host, ":"):
		return fmt.Errorf("%w: %s is not a valid IPv6 address", ErrBlocked, host)
	case literalErr != nil && endsInNumber(host):
		return fmt.Errorf("%w: %s is not an IPv4 address in dotted-decimal form", ErrBlocked, host)
	}
	if g.AllowPrivate {
		return nil
	}
	if literalErr == nil {
		if !Allowed(addr) {
			return fmt.Errorf("%w: %s is a private, loopback, link-local, metadata or reserved address", ErrBlocked, host)
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
			return fmt.Errorf("%w: %s resolves to %s, a private, loopback, link-local, metadata or reserved address", ErrBlocked, host, a.Unmap())
		}
	}
	return nil
}

// endsInNumber is the WHATWG URL standard's test for a host to be parsed as IPv4: its last
// label (after one trailing dot) is decimal digits or 0x-prefixed hex.
func endsInNumber(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	digits := "0123456789"
	if len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') {
		last, digits = last[2:], "0123456789abcdefABCDEF"
	}
	return strings.Trim(last, digits) == ""
}

func (g Guard) resolver() *net.Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

// Control is a net.Dialer Control hook refusing connections to blocked addresses; it sees the
// address actually being dialled, after DNS resolution, zone included ([fe80::1%eth0]:443).
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
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: g.Control, Resolver: g.Resolver}
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
