package netguard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEveryBlockedClassIsRefused(t *testing.T) {
	t.Parallel()
	for _, a := range []string{
		"10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", // private
		"127.0.0.1", "127.9.9.9", "::1", // loopback
		"169.254.1.1", "fe80::1", // link-local
		"169.254.169.254", "fd00:ec2::254", // metadata
		"0.0.0.0", "::", // unspecified
		"100.64.0.1", "100.127.255.254", // CGNAT
		"fc00::1", "fd12:3456::1", // unique local
		"::ffff:10.0.0.1", "::ffff:127.0.0.1", // v4-mapped
		"64:ff9b::a00:1", // NAT64 of 10.0.0.1
		"224.0.0.1", "255.255.255.255",
	} {
		require.False(t, Allowed(netip.MustParseAddr(a)), a)
	}
	for _, a := range []string{"93.184.216.34", "8.8.8.8", "2606:4700::1111", "172.32.0.1", "100.128.0.1"} {
		require.True(t, Allowed(netip.MustParseAddr(a)), a)
	}
}

// failingResolver answers no lookup, as for a host that does not exist.
func failingResolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "no DNS in tests", IsNotFound: true}
	}}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := Guard{}
	for _, bad := range []string{
		"http://example.com/hook",                  // not https
		"https://10.0.0.5/hook",                    // private literal
		"https://[::1]/hook",                       // loopback literal
		"https://169.254.169.254/latest/meta-data", // metadata
		"https://user:pw@example.com/",             // credentials
		"not a url", "/relative", "ftp://example.com/",
		"https://localhost/hook", // resolves to loopback
	} {
		require.ErrorIs(t, g.CheckURL(ctx, bad), ErrBlocked, bad)
	}
	require.NoError(t, g.CheckURL(ctx, "https://93.184.216.34/hook"))
	require.NoError(t, Guard{AllowPrivate: true}.CheckURL(ctx, "http://127.0.0.1:9999/hook"))
	require.ErrorIs(t, Guard{Resolver: failingResolver()}.CheckURL(ctx, "https://nowhere.invalid/"), ErrBlocked)
}

// TestDialTimeCheckStopsRebinding: a URL that passed the check (here: allowed by policy
// at registration) still cannot reach a loopback listener, because the dialled address is
// checked again.
func TestDialTimeCheckStopsRebinding(t *testing.T) {
	t.Parallel()
	hit := false
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit = true }))
	defer srv.Close()
	_, err := Guard{}.Client(5 * time.Second).Get(srv.URL)
	require.ErrorIs(t, err, ErrBlocked)
	require.False(t, hit)

	resp, err := Guard{AllowPrivate: true}.Client(5 * time.Second).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.True(t, hit)
}
