package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"switchboard/netguard"
)

// site is a local test web site that records which paths were requested.
type site struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newSite(t *testing.T, routes map[string]http.HandlerFunc) *site {
	t.Helper()
	s := &site{hits: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		h, found := routes[r.URL.Path]
		if !found {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) url(path string) string { return s.srv.URL + path }

func (s *site) hit(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func (s *site) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.hits {
		n += c
	}
	return n
}

func page(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, body)
	}
}

func links(title string, hrefs ...string) http.HandlerFunc {
	var b strings.Builder
	fmt.Fprintf(&b, "<html><head><title>%s</title></head><body><p>Text of %s.</p>", title, title)
	for _, h := range hrefs {
		fmt.Fprintf(&b, `<a href="%s">%s</a> `, h, h)
	}
	b.WriteString("</body></html>")
	return page(b.String())
}

func redirect(code int, to string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, code) }
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

func text(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = io.WriteString(w, body)
	}
}

var errRefused = errors.New("refused by test policy")

// testConfig is the production setup with private addresses allowed (httptest listens on
// loopback), plus a CheckURL that refuses any URL containing "/refused".
func testConfig() Config {
	g := netguard.Guard{AllowPrivate: true}
	return Config{
		Client: g.Client(10 * time.Second),
		CheckURL: func(ctx context.Context, raw string) error {
			if strings.Contains(raw, "/refused") {
				return errRefused
			}
			return g.CheckURL(ctx, raw)
		},
	}
}

func run(t *testing.T, cfg Config, start string, depth int) ([]Page, Stats, error) {
	t.Helper()
	var pages []Page
	st, err := Crawl(context.Background(), cfg, start, depth, func(p Page) error {
		pages = append(pages, p)
		return nil
	})
	return pages, st, err
}

// paths lists the pages' paths, in emission order.
func paths(t *testing.T, pages []Page) []string {
	t.Helper()
	out := make([]string, 0, len(pages))
	for _, p := range pages {
		u, err := url.Parse(p.URL)
		require.NoError(t, err)
		out = append(out, u.Path)
	}
	return out
}

const indexHTML = `<!doctype html>
<html><head><title>Home &amp; Garden</title>
<style>.x { color: red } /* STYLETEXT */</style>
<script>var secret = "SCRIPTTEXT";</script>
</head>
<body>
<nav><a href="/a">NAVTEXT</a></nav>
<h1>Welcome</h1>
<p>Caf&eacute; &lt;home&gt; &mdash; fresh&nbsp;flowers &#x263A;</p>
<div>Second   block
  of text</div>
<noscript>NOSCRIPTTEXT</noscript>
<template><p>TEMPLATETEXT</p></template>
<svg><text>SVGTEXT</text></svg>
<a href="b">B</a>
<a href="/a#section">A with a fragment</a>
<a href="./a">A again</a>
<a href="%s/">another host</a>
<a href="/private/secret">private</a>
<a href="/doc.pdf">a PDF</a>
<a href="/noindex">noindex</a>
<a href="/nofollow">nofollow</a>
<a href="/moved">moved</a>
<a href="/away">away</a>
<a href="/refused">refused</a>
<a href="/missing">missing</a>
<a href="/relnofollow" rel="external NoFollow">rel nofollow</a>
<a href="mailto:someone@example.com">mail</a>
<a href="javascript:void(0)">js</a>
<footer>FOOTERTEXT <a href="/a">A from the footer</a></footer>
</body></html>`

// testSite: index -> a, b -> a1, b1 (and /target) -> a1x, and every special case linked from
// the index. other is another host that must never be contacted.
func testSite(t *testing.T) (main, other *site) {
	t.Helper()
	other = newSite(t, map[string]http.HandlerFunc{"/": links("Other"), "/x": links("Other X")})
	main = newSite(t, map[string]http.HandlerFunc{
		"/robots.txt":     text("text/plain", "# test\nUser-agent: *\nDisallow: /private/\n"),
		"/":               page(fmt.Sprintf(indexHTML, other.srv.URL)),
		"/a":              links("A", "/a1"),
		"/b":              links("B", "b1", "/target"),
		"/a1":             links("A1", "a1x"),
		"/b1":             links("B1"),
		"/a1x":            links("A1X", "/a1x/deeper"),
		"/a1x/deeper":     links("Deeper"),
		"/private/secret": links("Secret"),
		"/doc.pdf":        text("application/pdf", "%PDF-1.4"),
		"/noindex":        page(`<html><head><meta name="robots" content="noindex"><title>NI</title></head><body><a href="/from-noindex">x</a></body></html>`),
		"/from-noindex":   links("From noindex"),
		"/nofollow":       page(`<html><head><meta name="ROBOTS" content="index, NOFOLLOW"><title>NF</title></head><body><a href="/from-nofollow">x</a></body></html>`),
		"/from-nofollow":  links("From nofollow"),
		"/moved":          redirect(http.StatusMovedPermanently, "/target"),
		"/target":         links("Target"),
		"/away":           redirect(http.StatusFound, other.url("/x")),
		"/refused":        links("Refused"),
		"/relnofollow":    links("Rel nofollow"),
	})
	return main, other
}

func TestCrawlSite(t *testing.T) {
	t.Parallel()
	main, other := testSite(t)
	pages, st, err := run(t, testConfig(), main.url("/"), 10)
	require.NoError(t, err)

	require.Equal(t, []string{"/", "/a", "/b", "/nofollow", "/target", "/a1", "/b1", "/from-noindex", "/a1x", "/a1x/deeper"}, paths(t, pages))
	depths := map[string]int{}
	for _, p := range pages {
		u, _ := url.Parse(p.URL)
		depths[u.Path] = p.Depth
		require.Equal(t, main.srv.URL+u.Path, p.URL, "normalized, no fragment")
	}
	require.Equal(t, map[string]int{"/": 1, "/a": 2, "/b": 2, "/nofollow": 2, "/target": 2, "/a1": 3, "/b1": 3, "/from-noindex": 3, "/a1x": 4, "/a1x/deeper": 5}, depths)

	// Skipped: /private/secret (robots.txt), /doc.pdf (not HTML), /noindex (not emitted),
	// /away (redirect to another host), /refused (CheckURL). Failed: /missing (404).
	require.Equal(t, Stats{Fetched: 10, Skipped: 5, Failed: 1}, st)

	for path, n := range map[string]int{
		"/robots.txt": 1, "/": 1, "/a": 1, "/target": 1, "/moved": 1, "/doc.pdf": 1, "/noindex": 1, "/away": 1, "/missing": 1,
		"/private/secret": 0, "/refused": 0, "/relnofollow": 0, "/from-nofollow": 0,
	} {
		require.Equal(t, n, main.hit(path), path)
	}
	require.Zero(t, other.total(), "another host is never contacted, not even through a redirect")

	index := pages[0]
	require.Equal(t, "Home & Garden", index.Title)
	require.Contains(t, index.Text, "Welcome\n\nCafé <home> — fresh flowers ☺\n\nSecond block of text\n\nB A with a fragment")
	for _, hidden := range []string{"SCRIPTTEXT", "STYLETEXT", "NAVTEXT", "FOOTERTEXT", "NOSCRIPTTEXT", "TEMPLATETEXT", "SVGTEXT", "&amp;", "&lt;"} {
		require.NotContains(t, index.Text, hidden)
	}
	require.Equal(t, "Text of A.\n\n/a1", pages[1].Text)
}

func TestDepthLimits(t *testing.T) {
	t.Parallel()
	t.Run("depth 1 is the start page only", func(t *testing.T) {
		t.Parallel()
		main, _ := testSite(t)
		pages, st, err := run(t, testConfig(), main.url("/"), 1)
		require.NoError(t, err)
		require.Equal(t, []string{"/"}, paths(t, pages))
		require.Equal(t, Stats{Fetched: 1}, st)
		require.Equal(t, 2, main.total(), "robots.txt and the start page")
	})
	t.Run("depth 3 reaches level 3, not level 4", func(t *testing.T) {
		t.Parallel()
		main, _ := testSite(t)
		pages, _, err := run(t, testConfig(), main.url("/"), 3)
		require.NoError(t, err)
		require.Equal(t, []string{"/", "/a", "/b", "/nofollow", "/target", "/a1", "/b1", "/from-noindex"}, paths(t, pages))
		require.Zero(t, main.hit("/a1x"))
	})
	t.Run("depth below 1 is 1", func(t *testing.T) {
		t.Parallel()
		main, _ := testSite(t)
		pages, _, err := run(t, testConfig(), main.url("/"), 0)
		require.NoError(t, err)
		require.Equal(t, []string{"/"}, paths(t, pages))
	})
}

func TestMaxPages(t *testing.T) {
	t.Parallel()
	main, _ := testSite(t)
	cfg := testConfig()
	cfg.MaxPages = 3
	pages, st, err := run(t, cfg, main.url("/"), 10)
	require.NoError(t, err)
	require.Equal(t, []string{"/", "/a", "/b"}, paths(t, pages))
	require.Equal(t, 3, st.Fetched)
	require.Equal(t, 4, main.total(), "robots.txt and three pages")
}

func TestMaxPagesCountsEveryRequest(t *testing.T) {
	t.Parallel()
	s := newSite(t, map[string]http.HandlerFunc{
		"/":     links("Index", "/pdf", "/gone", "/a", "/b"),
		"/pdf":  text("application/pdf", "%PDF"),
		"/gone": status(http.StatusGone),
		"/a":    links("A"),
		"/b":    links("B"),
	})
	cfg := testConfig()
	cfg.MaxPages = 4
	pages, st, err := run(t, cfg, s.url("/"), 5)
	require.NoError(t, err)
	require.Equal(t, []string{"/", "/a"}, paths(t, pages))
	require.Equal(t, Stats{Fetched: 2, Skipped: 1, Failed: 1}, st)
	require.Zero(t, s.hit("/b"))
}

func TestRobotsTxtStatus(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		t.Run(fmt.Sprintf("%d disallows everything", code), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, map[string]http.HandlerFunc{
				"/robots.txt": status(code),
				"/":           links("Index", "/a"),
				"/a":          links("A"),
			})
			pages, st, err := run(t, testConfig(), s.url("/"), 3)
			require.ErrorIs(t, err, ErrDisallowed)
			require.ErrorContains(t, err, fmt.Sprintf("HTTP %d", code))
			require.Empty(t, pages)
			require.Equal(t, Stats{Skipped: 1}, st)
			require.Equal(t, 1, s.total(), "only robots.txt was requested")
		})
	}
	for _, code := range []int{http.StatusNotFound, http.StatusForbidden, http.StatusUnauthorized} {
		t.Run(fmt.Sprintf("%d allows everything", code), func(t *testing.T) {
			t.Parallel()
			s := newSite(t, map[string]http.HandlerFunc{
				"/robots.txt": status(code),
				"/":           links("Index", "/a"),
				"/a":          links("A"),
			})
			pages, _, err := run(t, testConfig(), s.url("/"), 3)
			require.NoError(t, err)
			require.Equal(t, []string{"/", "/a"}, paths(t, pages))
		})
	}
	t.Run("a same-host redirect is followed", func(t *testing.T) {
		t.Parallel()
		s := newSite(t, map[string]http.HandlerFunc{
			"/robots.txt":  redirect(http.StatusMovedPermanently, "/robots2.txt"),
			"/robots2.txt": text("text/plain", "User-agent: *\nDisallow: /a\n"),
			"/":            links("Index", "/a"),
			"/a":           links("A"),
		})
		pages, st, err := run(t, testConfig(), s.url("/"), 3)
		require.NoError(t, err)
		require.Equal(t, []string{"/"}, paths(t, pages))
		require.Equal(t, Stats{Fetched: 1, Skipped: 1}, st)
		require.Zero(t, s.hit("/a"))
	})
	t.Run("the start page disallowed", func(t *testing.T) {
		t.Parallel()
		s := newSite(t, map[string]http.HandlerFunc{
			"/robots.txt": text("text/plain", "User-agent: switchboardbot\nDisallow: /\n"),
			"/":           links("Index"),
		})
		_, _, err := run(t, testConfig(), s.url("/"), 3)
		require.ErrorIs(t, err, ErrDisallowed)
		require.Zero(t, s.hit("/"))
	})
}

func TestRobotsTxtRefusedByCheckURLAllowsAll(t *testing.T) {
	t.Parallel()
	s := newSite(t, map[string]http.HandlerFunc{
		"/robots.txt": text("text/plain", "User-agent: *\nDisallow: /\n"),
		"/":           links("Index", "/a"),
		"/a":          links("A"),
	})
	cfg := testConfig()
	check := cfg.CheckURL
	cfg.CheckURL = func(ctx context.Context, raw string) error {
		if strings.HasSuffix(raw, "/robots.txt") {
			return errRefused
		}
		return check(ctx, raw)
	}
	pages, _, err := run(t, cfg, s.url("/"), 2)
	require.NoError(t, err)
	require.Equal(t, []string{"/", "/a"}, paths(t, pages))
	require.Zero(t, s.hit("/robots.txt"))
}

func TestDelay(t *testing.T) {
	t.Parallel()
	main, _ := testSite(t)
	cfg := testConfig()
	cfg.Delay = time.Millisecond
	pages, _, err := run(t, cfg, main.url("/"), 2)
	require.NoError(t, err)
	require.Len(t, pages, 5)
}

func TestRobotsRules(t *testing.T) {
	t.Parallel()
	allowed := func(r *robots, path string) bool {
		u, err := url.Parse("https://example.com" + path)
		require.NoError(t, err)
		return r.allowed(u)
	}
	r := parseRobots(strings.Join([]string{
		"\uFEFF# comment",
		"User-agent: OtherBot",
		"Disallow: /",
		"",
		"user-agent: *  # everyone",
		"Disallow: /private/",
		"Allow: /private/public$",
		"Disallow: /*.pdf$",
		"Disallow: /search?",
		"Disallow: /ü",
		"Allow: /p",
		"Disallow: /page",
		"Disallow: /tie",
		"Allow: /tie",
		"Sitemap: https://example.com/sitemap.xml",
	}, "\r\n"), "switchboardbot")
	for path, want := range map[string]bool{
		"/":                    true,
		"/private/":            false,
		"/private/x":           false,
		"/private/public":      true,
		"/private/public/more": false,
		"/doc.pdf":             false,
		"/dir/doc.pdf":         false,
		"/doc.pdf?download=1":  true,
		"/doc.pdfx":            true,
		"/search":              true,
		"/search?q=go":         false,
		"/%C3%BC":              false,
		"/%c3%bc/x":            false,
		"/p":                   true,
		"/pa":                  true,
		"/page":                false,
		"/pages/1":             false,
		"/tie":                 true,
		"/robots.txt":          true,
	} {
		require.Equal(t, want, allowed(r, path), path)
	}

	groups := "User-agent: *\nDisallow: /\n\nUser-agent: SwitchboardBot/2.0\nUser-agent: otherbot\nDisallow: /secret\nAllow: /secret/ok\n"
	mine := parseRobots(groups, "switchboardbot")
	require.True(t, allowed(mine, "/"))
	require.False(t, allowed(mine, "/secret"))
	require.True(t, allowed(mine, "/secret/ok"))
	require.False(t, allowed(parseRobots(groups, "anotherbot"), "/"))

	require.True(t, allowed(parseRobots("User-agent: *\nDisallow:\n", "switchboardbot"), "/anything"))
	require.True(t, allowed(parseRobots("Disallow: /\n", "switchboardbot"), "/"), "rules outside a group are ignored")
	require.True(t, allowed(parseRobots("", "switchboardbot"), "/"))
	require.True(t, allowed(parseRobots("User-agent: *\nDisallow: /a*c$\n", "switchboardbot"), "/abcd"))
	require.False(t, allowed(parseRobots("User-agent: *\nDisallow: /a*c$\n", "switchboardbot"), "/abbbc"))
}

// TestRobotsRulesRFC9309 pins the RFC 9309 readings that robots.go keeps and that
// github.com/temoto/robotstxt (v1.1.2, the common Go library, released before the RFC)
// reads otherwise; see the comment on robots.
func TestRobotsRulesRFC9309(t *testing.T) {
	t.Parallel()
	allowed := func(body, path string) bool {
		u, err := url.Parse("https://example.com" + path)
		require.NoError(t, err)
		return parseRobots(body, "switchboardbot").allowed(u)
	}
	for _, tc := range []struct {
		name, body, path string
		want             bool
	}{
		// §2.2.2: on equivalent rules, Allow SHOULD be used (the library keeps the first).
		{"tie goes to allow", "User-agent: *\nDisallow: /tie\nAllow: /tie\n", "/tie", true},
		// A stray rule before any group is ignored (the library refuses the whole file).
		{"stray rule ignored, groups kept", "Disallow: /\nUser-agent: *\nDisallow: /x\n", "/x", false},
		{"stray rule ignored", "Disallow: /\nUser-agent: *\nDisallow: /x\n", "/", true},
		// §2.2.1: the product token is matched; a version after it does not hide the group
		// from the bot (the library compares the whole value).
		{"versioned token names the bot", "User-agent: *\nAllow: /\n\nUser-agent: SwitchboardBot/2.0\nDisallow: /private\n", "/private", false},
		// A shorter token is another bot (the library matches it as a prefix of ours).
		{"prefix token is another bot", "User-agent: switch\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "/", true},
		// §2.2.2: the longest pattern wins, wildcards counted as written (the library
		// compares the lengths of the regular expressions it builds).
		{"longer disallow beats shorter wildcard allow", "User-agent: *\nAllow: /*.html\nDisallow: /private/\n", "/private/a.html", false},
		{"longer wildcard allow beats shorter disallow", "User-agent: *\nDisallow: /private/\nAllow: /private/*.html\n", "/private/a.html", true},
		// §2.2.2: octets are compared percent-encoded (the library compares raw bytes).
		{"UTF-8 rule matches the encoded path", "User-agent: *\nDisallow: /ü\n", "/%C3%BC", false},
		{"encoded rule matches the encoded path in any case", "User-agent: *\nDisallow: /%c3%bc\n", "/%C3%BC/x", false},
	} {
		require.Equal(t, tc.want, allowed(tc.body, tc.path), tc.name)
	}
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	routes := map[string]http.HandlerFunc{
		"/":      links("Index", "/five/0", "/six/0", "/loop1", "/noloc"),
		"/loop1": redirect(http.StatusTemporaryRedirect, "/loop2"),
		"/loop2": redirect(http.StatusPermanentRedirect, "/loop1"),
		"/noloc": status(http.StatusFound),
	}
	for name, n := range map[string]int{"five": 5, "six": 6} { // chains of n redirects
		for i := range n {
			routes[fmt.Sprintf("/%s/%d", name, i)] = redirect(http.StatusSeeOther, fmt.Sprint(i+1))
		}
		routes[fmt.Sprintf("/%s/%d", name, n)] = links("End")
	}
	s := newSite(t, routes)
	pages, st, err := run(t, testConfig(), s.url("/"), 3)
	require.NoError(t, err)
	require.Equal(t, []string{"/", "/five/5"}, paths(t, pages))
	require.Equal(t, 2, pages[1].Depth)
	// /six: more than 5 redirects; /noloc: no Location; /loop1: back to an already crawled URL.
	require.Equal(t, Stats{Fetched: 2, Skipped: 1, Failed: 2}, st)
	require.Zero(t, s.hit("/six/6"))
	require.Equal(t, 1, s.hit("/loop1"))
	require.Equal(t, 1, s.hit("/loop2"))
}

func TestStartPageFailures(t *testing.T) {
	t.Parallel()
	other := newSite(t, map[string]http.HandlerFunc{"/": links("Other")})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":         redirect(http.StatusFound, "/home"),
		"/home":     links("Home"),
		"/error":    status(http.StatusInternalServerError),
		"/pdf":      text("application/pdf", "%PDF"),
		"/away":     redirect(http.StatusMovedPermanently, other.url("/")),
		"/refused/": links("Refused"),
	})

	pages, _, err := run(t, testConfig(), s.url("/"), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"/home"}, paths(t, pages), "a same-host redirect of the start URL is followed")

	_, st, err := run(t, testConfig(), s.url("/error"), 2)
	require.ErrorContains(t, err, "HTTP 500")
	require.Equal(t, Stats{Failed: 1}, st)

	_, st, err = run(t, testConfig(), s.url("/pdf"), 2)
	require.ErrorContains(t, err, "not HTML")
	require.Equal(t, Stats{Skipped: 1}, st)

	_, _, err = run(t, testConfig(), s.url("/away"), 2)
	require.ErrorContains(t, err, "another host")
	require.Zero(t, other.total())

	before := s.total()
	_, _, err = run(t, testConfig(), s.url("/refused/"), 2)
	require.ErrorIs(t, err, errRefused)
	require.Equal(t, before, s.total(), "nothing requested, not even robots.txt")

	_, _, err = run(t, testConfig(), "http://127.0.0.1:1/", 2)
	require.Error(t, err, "unreachable")

	for _, bad := range []string{"", "/relative", "ftp://example.com/", "mailto:a@example.com", "http://user:pw@example.com/", "http://%zz"} {
		_, _, err = run(t, testConfig(), bad, 2)
		require.Error(t, err, bad)
	}
	_, err = Crawl(context.Background(), Config{}, s.url("/"), 1, nil)
	require.ErrorContains(t, err, "Client is required")
}

func TestNetguardRefusesLoopback(t *testing.T) {
	t.Parallel()
	s := newSite(t, map[string]http.HandlerFunc{"/": links("Index")})
	g := netguard.Guard{} // production: private addresses refused
	cfg := Config{Client: g.Client(10 * time.Second), CheckURL: g.CheckURL}
	_, _, err := run(t, cfg, strings.Replace(s.url("/"), "http://", "https://", 1), 1)
	require.ErrorIs(t, err, netguard.ErrBlocked)
	require.Zero(t, s.total())
}

// newSite6 is newSite listening on [::1], the loopback that IPv6 zones and mapped forms
// disguise. It skips the test where the machine has no IPv6 loopback.
func newSite6(t *testing.T, routes map[string]http.HandlerFunc) (s *site, port string) {
	t.Helper()
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	s = newSite(t, routes)
	s.srv.Close()
	s.srv = httptest.NewUnstartedServer(s.srv.Config.Handler)
	s.srv.Listener.Close()
	s.srv.Listener = ln
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	_, port, err = net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	return s, port
}

// disguisedLoopback are spellings of [::1]:port (and of other internal addresses) that the
// guard must refuse: zones, mapped and compatible forms, metadata.
func disguisedLoopback(port string) []string {
	var out []string
	for _, host := range []string{
		"[::1%25lo]", "[::1%251]", "[0:0:0:0:0:0:0:1%25lo]", "[fe80::1%25lo]", "[fe80::1%25eth0]",
		"[fd00:ec2::254%25eth0]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]", "[::1]",
		"[64:ff9b::7f00:1]", "[2002:7f00:1::1]",
	} {
		out = append(out, "http://"+host+":"+port+"/latest/meta-data/", "https://"+host+":"+port+"/")
	}
	return out
}

// TestNetguardRefusesZonesAndMappedForms: a crawl of an internal address in any spelling is
// refused when the URL is checked, and, should a URL get past the check (a resolver answering
// differently later), again when the address is dialled.
func TestNetguardRefusesZonesAndMappedForms(t *testing.T) {
	t.Parallel()
	s, port := newSite6(t, map[string]http.HandlerFunc{"/": links("Index"), "/latest/meta-data/": links("Metadata")})
	g := netguard.Guard{} // production: private addresses refused
	checked := Config{Client: g.Client(10 * time.Second), CheckURL: g.CheckURL}
	dialOnly := Config{Client: g.Client(10 * time.Second)}
	for _, start := range disguisedLoopback(port) {
		_, _, err := run(t, checked, start, 2)
		require.ErrorIs(t, err, netguard.ErrBlocked, "check time: %s", start)
		if strings.HasPrefix(start, "http://") {
			_, _, err = run(t, dialOnly, start, 2)
			require.ErrorIs(t, err, netguard.ErrBlocked, "dial time: %s", start)
		}
	}
	require.Zero(t, s.total(), "nothing reached the listener")
}

// TestRedirectsToDisguisedLoopback: a page that passed the check cannot lead the crawler to
// an internal address through redirects or links, in any spelling.
func TestRedirectsToDisguisedLoopback(t *testing.T) {
	t.Parallel()
	routes := map[string]http.HandlerFunc{}
	s, port := newSite6(t, routes)
	var hrefs []string
	for i, target := range disguisedLoopback(port) {
		if strings.Contains(target, "//[::1]:") { // the site itself
			continue
		}
		routes[fmt.Sprintf("/r%d", i)] = redirect(http.StatusFound, target+fmt.Sprintf("inside%d", i))
		hrefs = append(hrefs, fmt.Sprintf("/r%d", i), target+fmt.Sprintf("linked%d", i))
	}
	routes["/"] = links("Index", hrefs...)
	// The site itself stands for a public one: its own host is allowed, the rest is judged by
	// the production guard.
	g := netguard.Guard{}
	cfg := Config{
		Client: netguard.Guard{AllowPrivate: true}.Client(10 * time.Second),
		CheckURL: func(ctx context.Context, raw string) error {
			if u, err := url.Parse(raw); err == nil && u.Host == "[::1]:"+port {
				return nil
			}
			return g.CheckURL(ctx, raw)
		},
	}
	pages, _, err := run(t, cfg, "http://[::1]:"+port+"/", 3)
	require.NoError(t, err)
	require.Equal(t, []string{"/"}, paths(t, pages))
	s.mu.Lock()
	defer s.mu.Unlock()
	for path, n := range s.hits {
		if strings.Contains(path, "inside") || strings.Contains(path, "linked") || strings.Contains(path, "meta-data") {
			require.Zero(t, n, path)
		}
	}
}

func TestClientRedirectsAreNotFollowedByTheClient(t *testing.T) {
	t.Parallel()
	other := newSite(t, map[string]http.HandlerFunc{"/": links("Other")})
	s := newSite(t, map[string]http.HandlerFunc{
		"/":     links("Index", "/away"),
		"/away": redirect(http.StatusFound, other.url("/")),
	})
	cfg := testConfig()
	cfg.Client = &http.Client{Timeout: 10 * time.Second} // follows redirects by default
	pages, st, err := run(t, cfg, s.url("/"), 2)
	require.NoError(t, err)
	require.Len(t, pages, 1)
	require.Equal(t, Stats{Fetched: 1, Skipped: 1}, st)
	require.Zero(t, other.total())
}

func TestPageHandling(t *testing.T) {
	t.Parallel()
	big := "<html><body><p>" + strings.Repeat("word ", 10000) + "</p></body></html>"
	s := newSite(t, map[string]http.HandlerFunc{
		"/": links("Index", "/latin1", "/big", "/header-noindex", "/other-bot-noindex", "/sniffed", "/xhtml", "/bot-meta"),
		"/latin1": text("text/html; charset=iso-8859-1",
			"<html><head><title>Caf\xe9</title></head><body><p>na\xefve</p></body></html>"),
		"/big": page(big),
		"/header-noindex": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Robots-Tag", "noindex")
			_, _ = io.WriteString(w, "<html><body><p>hidden</p></body></html>")
		},
		"/other-bot-noindex": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Robots-Tag", "googlebot: noindex")
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html><body><p>shown</p></body></html>")
		},
		"/sniffed": func(w http.ResponseWriter, _ *http.Request) {
			w.Header()["Content-Type"] = nil // no header: the body is sniffed
			_, _ = io.WriteString(w, "<!DOCTYPE html><html><body><p>sniffed</p></body></html>")
		},
		"/xhtml":    text("application/xhtml+xml; charset=utf-8", `<html xmlns="http://www.w3.org/1999/xhtml"><body><p>xhtml</p></body></html>`),
		"/bot-meta": page(`<html><head><meta name="SwitchboardBot" content="none"></head><body><a href="/unreached">x</a></body></html>`),
	})
	cfg := testConfig()
	cfg.MaxBytes = 1000
	pages, st, err := run(t, cfg, s.url("/"), 3)
	require.NoError(t, err)
	require.Equal(t, []string{"/", "/latin1", "/big", "/other-bot-noindex", "/sniffed", "/xhtml"}, paths(t, pages))
	require.Equal(t, Stats{Fetched: 6, Skipped: 2}, st)
	require.Equal(t, "Café", pages[1].Title)
	require.Equal(t, "naïve", pages[1].Text)
	require.NotEmpty(t, pages[2].Text)
	require.LessOrEqual(t, len(pages[2].Text), 1000, "the body is cut at MaxBytes")
	require.Equal(t, "shown", pages[3].Text)
	require.Equal(t, "sniffed", pages[4].Text)
	require.Equal(t, "xhtml", pages[5].Text)
	require.Zero(t, s.hit("/unreached"))
}

func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var agents []string
	s := newSite(t, map[string]http.HandlerFunc{
		"/": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			agents = append(agents, r.UserAgent())
			mu.Unlock()
			links("Index")(w, r)
		},
	})
	_, _, err := run(t, testConfig(), s.url("/"), 1)
	require.NoError(t, err)
	cfg := testConfig()
	cfg.UserAgent = "OtherBot/2"
	_, _, err = run(t, cfg, s.url("/"), 1)
	require.NoError(t, err)
	require.Equal(t, []string{defaultUserAgent, "OtherBot/2"}, agents)
}

func TestOnPageErrorStops(t *testing.T) {
	t.Parallel()
	main, _ := testSite(t)
	stop := errors.New("store is full")
	calls := 0
	st, err := Crawl(context.Background(), testConfig(), main.url("/"), 3, func(Page) error {
		calls++
		return stop
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, calls)
	require.Equal(t, Stats{}, st)
	require.Equal(t, 2, main.total())
}

func TestCancellation(t *testing.T) {
	t.Parallel()
	t.Run("from onPage", func(t *testing.T) {
		t.Parallel()
		main, _ := testSite(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		calls := 0
		_, err := Crawl(ctx, testConfig(), main.url("/"), 3, func(Page) error {
			calls++
			cancel()
			return nil
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 1, calls)
		require.Equal(t, 2, main.total())
	})
	t.Run("during a request", func(t *testing.T) {
		t.Parallel()
		arrived, release := make(chan struct{}), make(chan struct{})
		s := newSite(t, map[string]http.HandlerFunc{
			"/": links("Index", "/slow"),
			"/slow": func(_ http.ResponseWriter, r *http.Request) {
				close(arrived)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			},
		})
		t.Cleanup(func() { close(release) }) // runs before the server closes
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-arrived
			cancel()
		}()
		pages, _, err := runCtx(ctx, t, testConfig(), s.url("/"), 2)
		require.ErrorIs(t, err, context.Canceled)
		require.Len(t, pages, 1)
	})
	t.Run("during the politeness delay", func(t *testing.T) {
		t.Parallel()
		arrived := make(chan struct{})
		s := newSite(t, map[string]http.HandlerFunc{
			"/robots.txt": func(w http.ResponseWriter, _ *http.Request) {
				close(arrived)
				w.WriteHeader(http.StatusNotFound)
			},
			"/": links("Index"),
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-arrived
			cancel()
		}()
		cfg := testConfig()
		cfg.Delay = time.Hour
		_, _, err := runCtx(ctx, t, cfg, s.url("/"), 2)
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, s.hit("/"))
	})
	t.Run("before the start", func(t *testing.T) {
		t.Parallel()
		s := newSite(t, map[string]http.HandlerFunc{"/": links("Index")})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _, err := runCtx(ctx, t, testConfig(), s.url("/"), 2)
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, s.total())
	})
}

func runCtx(ctx context.Context, t *testing.T, cfg Config, start string, depth int) ([]Page, Stats, error) {
	t.Helper()
	var pages []Page
	st, err := Crawl(ctx, cfg, start, depth, func(p Page) error {
		pages = append(pages, p)
		return nil
	})
	return pages, st, err
}

func TestExtract(t *testing.T) {
	t.Parallel()
	doc, err := html.Parse(strings.NewReader(`<!doctype html><html><head>
<title>  The
  Title </title>
<meta name="robots" content="NOINDEX">
<base href="/docs/">
</head><body>
<header><h1>Heading</h1></header>
<p>One <b>bold</b>word, and <i>one</i> <em>more</em>.</p>
<ul><li>first</li><li>second</li></ul>
<table><tr><td>a</td><td>b</td></tr><tr><th>c</th><td>d</td></tr></table>
<p>line<br>break</p>
<pre>code  x
  y</pre>
<div hidden>HIDDEN</div><span style="display: none">NONE</span><span>shown</span>
<svg><title>SVGTITLE</title><a href="/svg-link"><text>SVGTEXT</text></a></svg>
<template><a href="/template-link">T</a></template>
<a href="guide">guide</a> <a href="#top">top</a> <a href="/abs?q=1#frag">abs</a>
<a href="https://Other.Example:443/x">other</a> <a rel="nofollow" href="/nf">nf</a>
<a href="tel:123">tel</a> <a>no href</a> <area href="/area">
</body></html>`))
	require.NoError(t, err)
	pageURL, _ := url.Parse("https://example.com/index.html")
	ex := extract(doc, pageURL, "switchboardbot")
	require.Equal(t, "The Title", ex.title)
	require.True(t, ex.noindex)
	require.False(t, ex.nofollow)
	require.Equal(t, strings.Join([]string{
		"Heading",
		"One boldword, and one more.",
		"first", "second",
		"a b", "c d",
		"line", "break",
		"code  x\n  y",
		"shown guide top abs other nf tel no href",
	}, "\n\n"), ex.text)
	var got []string
	for _, l := range ex.links {
		got = append(got, l.String())
	}
	require.Equal(t, []string{
		"https://example.com/docs/guide",
		"https://example.com/docs/",
		"https://example.com/abs?q=1",
		"https://other.example/x",
		"https://example.com/area",
	}, got)

	require.Equal(t, [2]bool{true, true}, func() [2]bool { a, b := robotsDirectives("None"); return [2]bool{a, b} }())
	ni, nf := headerRobots([]string{"switchboardbot: nofollow", "otherbot: noindex", "max-snippet: 20, noindex"}, "switchboardbot")
	require.True(t, ni)
	require.True(t, nf)
	require.True(t, isHTML("TEXT/HTML; charset=UTF-8"))
	require.True(t, isHTML("text/html;;bogus"))
	require.False(t, isHTML("application/pdf"))
	ni, nf = headerRobots([]string{"unavailable_after: 2030-01-01"}, "switchboardbot")
	require.False(t, ni)
	require.False(t, nf)
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"HTTP://Example.COM:80/a#frag":  "http://example.com/a",
		"https://example.com:443":       "https://example.com/",
		"https://example.com:8443/x?y#": "https://example.com:8443/x?y",
		"http://[::1]:80/":              "http://[::1]/",
		"http://[::1]:8080/p":           "http://[::1]:8080/p",
	} {
		u, err := url.Parse(in)
		require.NoError(t, err)
		n, ok := normalize(u)
		require.True(t, ok, in)
		require.Equal(t, want, n.String(), in)
	}
	for _, in := range []string{"ftp://example.com/", "mailto:x@example.com", "/relative", "https://u:p@example.com/", "javascript:alert(1)"} {
		u, err := url.Parse(in)
		require.NoError(t, err)
		_, ok := normalize(u)
		require.False(t, ok, in)
	}
	a, _ := url.Parse("http://example.com/p?q=1")
	b, _ := url.Parse("https://example.com/p?q=1")
	require.Equal(t, key(a), key(b), "http and https of the same page are one page")
}

func TestChunks(t *testing.T) {
	t.Parallel()
	require.Nil(t, Chunks("", 100))
	require.Nil(t, Chunks(" \n\n \t\n", 100))
	require.Equal(t, []string{"Hello world."}, Chunks("  Hello world.  ", 100))
	require.Equal(t, []string{"aaa\n\nbbb", "ccc"}, Chunks("aaa\n\nbbb\n\n\n  \nccc", 8))
	require.Equal(t, []string{"One two. Three four!", "Five six? Seven."},
		Chunks("One two. Three four! Five six? Seven.", 20))
	require.Equal(t, []string{`He said "stop."`, "Then he left. Wait...", "what?"},
		Chunks(`He said "stop." Then he left. Wait... what?`, 22), "closing quotes stay with their sentence")
	require.Equal(t, []string{"abcd", "efgh", "ij x"}, Chunks("abcdefghij x", 4))
	require.Equal(t, []string{"short", "A much longer sentence here. And another."},
		Chunks("short\n\nA much longer sentence here. And another.", 45), "paragraph breaks are kept when packing would exceed")

	cjk := Chunks("日本語のテキストです。二番目の文。", 10)
	require.Equal(t, []string{"日本語のテキストです", "。 二番目の文。"}, cjk)

	// Default size.
	long := strings.Repeat("Lorem ipsum dolor sit amet. ", 200)
	for _, c := range Chunks(long, 0) {
		require.LessOrEqual(t, utf8.RuneCountInString(c), 1000)
	}
}

func TestChunksProperties(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "go", "crawl", "über", "日本", "robots.txt", "sentence.", "what?", "wow!", "x", "knowledge", "—"}
	for range 200 {
		var b strings.Builder
		for range rng.IntN(8) {
			for range rng.IntN(60) {
				b.WriteString(words[rng.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteString("\n\n")
		}
		text := b.String()
		maxChars := 10 + rng.IntN(200)
		chunks := Chunks(text, maxChars)
		for _, c := range chunks {
			require.NotEmpty(t, c)
			require.Equal(t, strings.TrimSpace(c), c)
			require.LessOrEqual(t, utf8.RuneCountInString(c), maxChars)
		}
		require.Equal(t, strings.Fields(text), strings.Fields(strings.Join(chunks, " ")), "no word lost, split or reordered")
	}
}
