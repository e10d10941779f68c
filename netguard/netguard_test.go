package netguard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// refusedAddrs are spellings of addresses no user-aimed request may reach: every special-use
// range of the IANA registries, their IPv4-mapped, IPv4-compatible, NAT64 and 6to4 forms, and
// any address carrying a zone.
var refusedAddrs = []string{
	// IPv4
	"0.0.0.0", "0.1.2.3", // "this network"
	"10.1.2.3",                      // private
	"100.64.0.1", "100.127.255.254", // CGNAT
	"127.0.0.1", "127.9.9.9", // loopback
	"169.254.1.1", "169.254.169.254", // link-local, cloud metadata
	"172.16.0.1", "172.31.255.255", // private
	"192.0.0.1", "192.0.0.170", // IETF protocol assignments, NAT64 discovery
	"192.0.2.1", "198.51.100.7", "203.0.113.9", // documentation (TEST-NET-1, 2, 3)
	"192.88.99.1",              // 6to4 relay anycast (deprecated)
	"192.168.1.1",              // private
	"198.18.0.1", "198.19.1.1", // benchmarking
	"224.0.0.1", "239.255.255.250", // multicast
	"240.0.0.1", "255.255.255.255", // reserved, broadcast
	// IPv6
	"::", "::1", // unspecified, loopback
	"fe80::1", "febf::1", // link-local
	"fec0::1",                 // site-local (deprecated)
	"fc00::1", "fd12:3456::1", // unique local
	"fd00:ec2::254",      // cloud metadata over IPv6
	"ff02::1", "ff05::2", // multicast
	"2001:db8::1", "3fff::1", // documentation
	"2001::1", "2001:0:4136:e378::1", // Teredo
	"2001:2::1", "2001:10::1", // benchmarking, ORCHID
	"100::1", "100:0:0:1::1", // discard-only, dummy prefix
	"5f00::1",                    // SRv6 SIDs
	"64:ff9b:1::a00:1",           // local-use NAT64
	"::ffff:0:a00:1",             // SIIT "IPv4-translated"
	"4000::1", "1::1", "8000::1", // not in 2000::/3, the only global unicast space
	// IPv4-mapped forms of blocked IPv4
	"::ffff:10.0.0.1", "::ffff:127.0.0.1", "::ffff:7f00:1", "0:0:0:0:0:ffff:7f00:1",
	"::ffff:169.254.169.254", "::ffff:192.0.2.1", "::ffff:0.0.0.0", "::ffff:100.64.0.1",
	// IPv4-compatible (deprecated): every ::/96 address, whatever it embeds
	"::127.0.0.1", "::7f00:1", "::10.0.0.1", "::8.8.8.8", "::169.254.169.254",
	// NAT64 of blocked IPv4
	"64:ff9b::a00:1", "64:ff9b::127.0.0.1", "64:ff9b::169.254.169.254", "64:ff9b::c000:201",
	// 6to4 embedding blocked IPv4
	"2002:7f00:1::1", "2002:a00:1::", "2002:a9fe:a9fe::1", "2002:c000:201::1",
	// zones, on any address at all
	"::1%lo", "fe80::1%eth0", "fd00:ec2::254%eth0", "fe80::1%1", "2606:4700::1111%eth0",
	"::ffff:127.0.0.1%lo", "64:ff9b::808:808%eth0",
}

// allowedAddrs are public addresses, in every form the guard understands.
var allowedAddrs = []string{
	"93.184.216.34", "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "192.0.3.1", "198.51.101.1",
	"2606:4700::1111", "2a00:1450:4001::1", "2620:4f:8000::1",
	"::ffff:8.8.8.8",   // mapped public IPv4
	"64:ff9b::808:808", // NAT64 of 8.8.8.8: how an IPv6-only network reaches IPv4 sites
	"2002:808:808::1",  // 6to4 of 8.8.8.8
}

func TestAllowed(t *testing.T) {
	t.Parallel()
	for _, a := range refusedAddrs {
		require.False(t, Allowed(netip.MustParseAddr(a)), a)
	}
	for _, a := range allowedAddrs {
		require.True(t, Allowed(netip.MustParseAddr(a)), a)
	}
	require.False(t, Allowed(netip.Addr{}), "the zero Addr")
}

// failingResolver answers no lookup, as for a host that does not exist.
func failingResolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "no DNS in tests", IsNotFound: true}
	}}
}

// hostsURL writes an address as a URL's host: brackets and an escaped zone for IPv6.
func hostsURL(a string) string {
	if !strings.Contains(a, ":") {
		return "https://" + a + "/hook"
	}
	return "https://[" + strings.ReplaceAll(a, "%", "%25") + "]/hook"
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// No lookups in this test: a literal must be judged without DNS.
	g := Guard{Resolver: failingResolver()}
	for _, a := range refusedAddrs {
		u := hostsURL(a)
		require.ErrorIs(t, g.CheckURL(ctx, u), ErrBlocked, u)
		require.ErrorIs(t, g.CheckURL(ctx, strings.Replace(u, "/hook", ":8443/hook", 1)), ErrBlocked, u)
	}
	for _, bad := range []string{
		"http://example.com/hook",      // not https
		"https://user:pw@example.com/", // credentials
		"not a url", "/relative", "ftp://example.com/", "https:opaque", "https://:443/",
		// zones, as the issue sent them and in other spellings
		"https://[::1%25lo]:8443/", "https://[fe80::1%25eth0]/", "https://[fd00:ec2::254%25eth0]/latest/meta-data/",
		"https://[fe80::1%25%65th0]/", "https://[::1%lo]/",
		// IPv4 in the spellings of inet_aton (getaddrinfo accepts them): decimal, octal, hex,
		// short forms; a host whose last label is a number is an IPv4 address or nothing
		"https://2130706433/", "https://0x7f000001/", "https://017700000001/", "https://0177.0.0.1/",
		"https://0x7f.0.0.1/", "https://127.1/", "https://127.0.1/", "https://10.1/", "https://169.254.43518/",
		"https://0/", "https://127.0.0.1./", "https://8.8.8.08/", "https://1.2.3.4.5/", "https://example.123/",
		"https://0xa9.0xfe.0xa9.0xfe/latest/meta-data/",
	} {
		require.ErrorIs(t, g.CheckURL(ctx, bad), ErrBlocked, bad)
	}
	for _, a := range allowedAddrs {
		require.NoError(t, g.CheckURL(ctx, hostsURL(a)), a)
	}
	require.NoError(t, g.CheckURL(ctx, "https://93.184.216.34:8443/hook"))
	require.NoError(t, Guard{AllowPrivate: true}.CheckURL(ctx, "http://127.0.0.1:9999/hook"))
	require.ErrorIs(t, Guard{Resolver: failingResolver()}.CheckURL(ctx, "https://nowhere.invalid/"), ErrBlocked)
	require.ErrorIs(t, Guard{}.CheckURL(ctx, "https://localhost/hook"), ErrBlocked, "resolves to loopback")
}

func TestCheckURLNamesTheZone(t *testing.T) {
	t.Parallel()
	err := Guard{}.CheckURL(context.Background(), "https://[fe80::1%25eth0]/")
	require.ErrorIs(t, err, ErrBlocked)
	require.Contains(t, err.Error(), "zone")
}

// TestControl is the dial-time check on its own: the address the dialer is about to connect
// to, after resolution, zone included.
func TestControl(t *testing.T) {
	t.Parallel()
	for _, a := range refusedAddrs {
		addr := net.JoinHostPort(a, "443")
		require.ErrorIs(t, Guard{}.Control("tcp", addr, nil), ErrBlocked, addr)
	}
	for _, a := range allowedAddrs {
		require.NoError(t, Guard{}.Control("tcp", net.JoinHostPort(a, "443"), nil), a)
	}
	require.ErrorIs(t, Guard{}.Control("tcp", "not an address", nil), ErrBlocked)
	require.NoError(t, Guard{AllowPrivate: true}.Control("tcp", "[::1%lo]:443", nil))
}

// TestDialTimeCheckStopsRebinding: a URL that passed the check (here: allowed by policy
// at registration) still cannot reach a loopback listener, because the dialled address is
// checked again.
func TestDialTimeCheckStopsRebinding(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, err := Guard{}.Client(5 * time.Second).Get(srv.URL)
	require.ErrorIs(t, err, ErrBlocked)
	require.Zero(t, hits.Load())

	resp, err := Guard{AllowPrivate: true}.Client(5 * time.Second).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, int32(1), hits.Load())
}

// listen6 serves h on [::1], the loopback the issue reached through a zone.
func listen6(t *testing.T, h http.Handler) (port string) {
	t.Helper()
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, err = net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	return port
}

// TestDialTimeZones: the guard's client refuses, before connecting, every spelling of the
// loopback listener that a zone or a mapping could disguise (the URL check is not involved).
func TestDialTimeZones(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	port := listen6(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	client := Guard{}.Client(5 * time.Second)
	for _, host := range []string{"[::1%25lo]", "[::1%251]", "[::1]", "[0:0:0:0:0:0:0:1%25lo]", "[fe80::1%25lo]", "[::ffff:127.0.0.1]", "[::127.0.0.1]"} {
		u := "http://" + host + ":" + port + "/"
		_, err := client.Get(u)
		require.ErrorIs(t, err, ErrBlocked, u)
	}
	require.Zero(t, hits.Load(), "nothing reached the listener")

	// The same listener is reachable when private addresses are allowed: the refusals above
	// are the guard's, not a network that cannot route these URLs.
	resp, err := Guard{AllowPrivate: true}.Client(5 * time.Second).Get("http://[::1%25lo]:" + port + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, int32(1), hits.Load())
}
