// Package crawl is a polite website crawler that fills an agent's knowledge base: it walks one
// site breadth-first from a start URL, honours robots.txt and robots meta tags, and hands each
// page's title and visible text to the caller as soon as it is extracted.
//
// The crawler never dials by itself: every request goes through the *http.Client it is given
// (netguard's client in production), and every URL is passed to Config.CheckURL (netguard's
// CheckURL) before it is fetched, redirect targets included, so links cannot lead it to
// internal addresses.
package crawl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// Config configures a crawl. Only Client is required.
type Config struct {
	Client    *http.Client                                // all requests go through it
	CheckURL  func(ctx context.Context, url string) error // refuse a URL before fetching it (nil: allow all)
	MaxPages  int                                         // page cap, default 50
	MaxBytes  int64                                       // per page body cap, default 2 MiB
	UserAgent string                                      // default "SwitchboardBot/1.0 (+https://switchboard.example/bot)"
	Delay     time.Duration                               // politeness delay between requests to the host, default 0 (the caller decides)
}

// Page is one extracted page.
type Page struct {
	URL   string // the page's final URL, after same-host redirects, normalized, without fragment
	Title string // the <title>, whitespace collapsed
	Text  string // the visible text of the body; paragraphs separated by a blank line
	Depth int    // 1 for the start page, 2 for the pages it links to, ...
}

// Stats counts what a crawl did with the URLs it considered (same-host links only).
type Stats struct {
	Fetched int // pages handed to onPage
	Skipped int // URLs deliberately not fetched or not emitted: robots.txt, CheckURL, non-HTML, noindex, off-host redirect, duplicate redirect target
	Failed  int // URLs that could not be fetched: transport error, non-2xx status, too many or broken redirects
}

// ErrDisallowed is wrapped by the error Crawl returns when robots.txt disallows the start URL
// (also when robots.txt answers 5xx or 429, which disallows the whole site).
var ErrDisallowed = errors.New("disallowed by robots.txt")

const (
	defaultMaxPages  = 50
	defaultMaxBytes  = 2 << 20
	defaultUserAgent = "SwitchboardBot/1.0 (+https://switchboard.example/bot)"
	maxRedirects     = 5
	maxRobotsBytes   = 500 << 10 // what Google reads of a robots.txt
)

// Crawl fetches start and then, breadth-first, the same-host links it finds, down to depth
// (depth 1 = the start page only; 2 = start plus the pages it links to; ...; depth < 1 is
// treated as 1), at most MaxPages pages, respecting robots.txt (User-agent * and the bot's own
// name; Disallow/Allow longest-match rules; a missing or failing robots.txt (4xx) allows
// everything, a 5xx robots.txt disallows everything, as Google does).
// onPage is called for each page as it is extracted (so the caller can store chunks
// incrementally); an error from onPage stops the crawl and is returned as is. onPage may be
// nil (only Stats are wanted).
//
// MaxPages caps the number of URLs requested (a redirect chain counts as one; robots.txt does
// not count), so non-HTML, noindex and failing pages use up the budget too.
//
// The start URL's failure (invalid, refused by CheckURL, disallowed by robots.txt, unreachable,
// non-2xx, redirected to another host, not HTML) is returned as an error; later pages' failures
// are counted in Stats and the crawl goes on. On cancellation Crawl returns ctx.Err().
func Crawl(ctx context.Context, cfg Config, start string, depth int, onPage func(Page) error) (Stats, error) {
	if cfg.Client == nil {
		return Stats{}, errors.New("crawl: Config.Client is required")
	}
	if cfg.MaxPages <= 0 {
		cfg.MaxPages = defaultMaxPages
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = defaultMaxBytes
	}
	if strings.TrimSpace(cfg.UserAgent) == "" {
		cfg.UserAgent = defaultUserAgent
	}
	if depth < 1 {
		depth = 1
	}
	u, err := url.Parse(strings.TrimSpace(start))
	if err != nil {
		return Stats{}, fmt.Errorf("crawl: invalid start URL %q: %w", start, err)
	}
	u, ok := normalize(u)
	if !ok {
		return Stats{}, fmt.Errorf("crawl: start URL %q must be an absolute http or https URL without credentials", start)
	}

	// The client must not follow redirects by itself: each hop is checked here. A shallow copy
	// keeps the caller's transport (and its dial guard), jar and timeout.
	client := *cfg.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	c := &crawler{
		cfg:    cfg,
		client: &client,
		host:   u.Host,
		agent:  productToken(cfg.UserAgent),
		seen:   map[string]bool{},
		done:   map[string]bool{},
	}
	// Refuse an internal start before any request at all, robots.txt included.
	if err := c.check(ctx, u); err != nil {
		c.stats.Skipped++
		return c.stats, c.fatal(ctx, fmt.Errorf("crawl: start URL %s refused: %w", u, err))
	}
	if err := c.loadRobots(ctx, u); err != nil {
		return c.stats, err
	}

	type item struct {
		u     *url.URL
		depth int
	}
	queue := []item{{u, 1}}
	c.seen[key(u)] = true
	// At most MaxPages queued URLs are requested, in queue order, so URLs found after many
	// thousands of others would hardly ever be reached; the bound keeps link-stuffed pages from
	// exhausting memory.
	maxSeen := 20*cfg.MaxPages + 10000
	first := true
	for len(queue) > 0 && c.requests < cfg.MaxPages {
		if err := ctx.Err(); err != nil {
			return c.stats, err
		}
		it := queue[0]
		queue = queue[1:]
		isStart := first
		first = false
		if c.done[key(it.u)] { // reached earlier as a redirect target
			continue
		}

		res, err := c.fetch(ctx, it.u)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return c.stats, ctxErr
			}
			if res.outcome == outcomeFailed {
				c.stats.Failed++
			} else {
				c.stats.Skipped++
			}
			if isStart {
				return c.stats, fmt.Errorf("crawl: start URL %s: %w", it.u, err)
			}
			continue
		}

		if res.noindex {
			c.stats.Skipped++
		} else {
			if onPage != nil {
				if err := onPage(Page{URL: res.url.String(), Title: res.title, Text: res.text, Depth: it.depth}); err != nil {
					return c.stats, err
				}
			}
			c.stats.Fetched++
		}

		if res.nofollow || it.depth >= depth {
			continue
		}
		for _, l := range res.links {
			if !c.inScope(l) {
				continue
			}
			k := key(l)
			if c.seen[k] {
				continue
			}
			if len(c.seen) >= maxSeen {
				break
			}
			c.seen[k] = true
			if !c.robots.allowed(l) {
				c.stats.Skipped++
				continue
			}
			queue = append(queue, item{l, it.depth + 1})
		}
	}
	return c.stats, ctx.Err()
}

type crawler struct {
	cfg      Config
	client   *http.Client
	host     string // the start URL's normalized host[:port]; every fetched URL has it
	agent    string // the bot's product token, lower case, for robots.txt and meta robots
	robots   *robots
	seen     map[string]bool // URL keys already queued (or considered)
	done     map[string]bool // URL keys already requested
	stats    Stats
	requests int       // page URLs requested, for MaxPages
	last     time.Time // when the previous request to the host was answered
}

// fatal prefers the context's error once it is done: a refusal caused by cancellation is a
// cancellation.
func (c *crawler) fatal(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return err
}

func (c *crawler) check(ctx context.Context, u *url.URL) error {
	if c.cfg.CheckURL == nil {
		return nil
	}
	return c.cfg.CheckURL(ctx, u.String())
}

func (c *crawler) inScope(u *url.URL) bool {
	return u.Host == c.host
}

type outcome int

const (
	outcomeOK outcome = iota
	outcomeSkipped
	outcomeFailed
)

type result struct {
	outcome  outcome
	url      *url.URL // final URL
	title    string
	text     string
	links    []*url.URL
	noindex  bool
	nofollow bool
}

// fetch requests u, following same-host redirects, and extracts the page. On error,
// result.outcome says whether the URL counts as skipped or failed.
func (c *crawler) fetch(ctx context.Context, u *url.URL) (result, error) {
	cur := u
	for hop := 0; ; hop++ {
		k := key(cur)
		if hop > 0 && c.done[k] {
			return result{outcome: outcomeSkipped}, fmt.Errorf("redirects to %s, already crawled", cur)
		}
		if !c.robots.allowed(cur) {
			return result{outcome: outcomeSkipped}, fmt.Errorf("%s: %s: %w", cur, c.robots.reason(), ErrDisallowed)
		}
		if err := c.check(ctx, cur); err != nil {
			return result{outcome: outcomeSkipped}, fmt.Errorf("%s refused: %w", cur, err)
		}
		if hop == 0 {
			c.requests++
		}
		c.done[k] = true
		c.seen[k] = true

		resp, err := c.get(ctx, cur, "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1")
		if err != nil {
			return result{outcome: outcomeFailed}, err
		}
		if isRedirect(resp.StatusCode) {
			discard(resp)
			if hop == maxRedirects {
				return result{outcome: outcomeFailed}, fmt.Errorf("more than %d redirects", maxRedirects)
			}
			next, err := redirectTarget(cur, resp)
			if err != nil {
				return result{outcome: outcomeFailed}, err
			}
			if !c.inScope(next) {
				return result{outcome: outcomeSkipped}, fmt.Errorf("redirects to another host: %s", next)
			}
			cur = next
			continue
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			discard(resp)
			return result{outcome: outcomeFailed}, fmt.Errorf("%s answered HTTP %d", cur, resp.StatusCode)
		}
		return c.readPage(cur, resp)
	}
}

func (c *crawler) readPage(u *url.URL, resp *http.Response) (result, error) {
	ct := resp.Header.Get("Content-Type")
	if ct != "" && !isHTML(ct) {
		discard(resp)
		return result{outcome: outcomeSkipped}, fmt.Errorf("%s is not HTML (%s)", u, ct)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxBytes)) // a longer page is truncated
	resp.Body.Close()
	if err != nil {
		return result{outcome: outcomeFailed}, fmt.Errorf("reading %s: %w", u, err)
	}
	if ct == "" {
		ct = http.DetectContentType(body)
		if !isHTML(ct) {
			return result{outcome: outcomeSkipped}, fmt.Errorf("%s is not HTML (sniffed %s)", u, ct)
		}
	}
	var r io.Reader = bytes.NewReader(body)
	if cr, err := charset.NewReader(r, ct); err == nil { // to UTF-8, from the header, a BOM or <meta charset>
		r = cr
	} else {
		r = bytes.NewReader(body)
	}
	doc, err := html.Parse(r)
	if err != nil {
		return result{outcome: outcomeFailed}, fmt.Errorf("parsing %s: %w", u, err)
	}
	ex := extract(doc, u, c.agent)
	res := result{
		outcome:  outcomeOK,
		url:      u,
		title:    ex.title,
		text:     ex.text,
		links:    ex.links,
		noindex:  ex.noindex,
		nofollow: ex.nofollow,
	}
	hNoindex, hNofollow := headerRobots(resp.Header.Values("X-Robots-Tag"), c.agent)
	res.noindex = res.noindex || hNoindex
	res.nofollow = res.nofollow || hNofollow
	return res, nil
}

// get makes one request, after the politeness delay.
func (c *crawler) get(ctx context.Context, u *url.URL, accept string) (*http.Response, error) {
	if err := c.pause(ctx); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	req.Header.Set("Accept", accept)
	resp, err := c.client.Do(req)
	c.last = time.Now()
	return resp, err
}

// pause waits until Delay has passed since the previous request was answered, or ctx is done.
func (c *crawler) pause(ctx context.Context) error {
	if c.cfg.Delay <= 0 || c.last.IsZero() {
		return ctx.Err()
	}
	wait := time.Until(c.last.Add(c.cfg.Delay))
	if wait <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

func redirectTarget(cur *url.URL, resp *http.Response) (*url.URL, error) {
	loc := strings.TrimSpace(resp.Header.Get("Location"))
	if loc == "" {
		return nil, fmt.Errorf("%s: redirect without Location", cur)
	}
	next, err := cur.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("%s: bad redirect Location %q: %w", cur, loc, err)
	}
	next, ok := normalize(next)
	if !ok {
		return nil, fmt.Errorf("%s: redirect to a non-http(s) URL %q", cur, loc)
	}
	return next, nil
}

func isHTML(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(strings.ToLower(strings.TrimSpace(contentType)), ";")
		mt = strings.TrimSpace(mt)
	}
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// discard drains a little of an unwanted body, so the connection can be reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}

// normalize returns u as the crawler keeps URLs: http or https only, no credentials, lower-case
// host without the scheme's default port, no fragment, "/" for an empty path.
func normalize(u *url.URL) (*url.URL, bool) {
	if u == nil || u.Opaque != "" || u.User != nil || u.Host == "" {
		return nil, false
	}
	n := *u
	n.Scheme = strings.ToLower(n.Scheme)
	if n.Scheme != "http" && n.Scheme != "https" {
		return nil, false
	}
	host, port := n.Hostname(), n.Port()
	if host == "" {
		return nil, false
	}
	host = strings.ToLower(host)
	if strings.Contains(host, ":") { // IPv6 literal
		host = "[" + host + "]"
	}
	if port == "" || (n.Scheme == "http" && port == "80") || (n.Scheme == "https" && port == "443") {
		n.Host = host
	} else {
		n.Host = host + ":" + port
	}
	n.Fragment, n.RawFragment = "", ""
	if n.Path == "" && n.RawPath == "" {
		n.Path = "/"
	}
	return &n, true
}

// key identifies a page for deduplication: http and https of the same host and path are the
// same page.
func key(u *url.URL) string {
	return u.Host + u.RequestURI()
}

// productToken is the bot's name in a User-Agent: "SwitchboardBot/1.0 (+...)" -> "switchboardbot".
func productToken(ua string) string {
	ua = strings.TrimSpace(ua)
	if i := strings.IndexAny(ua, "/ \t"); i >= 0 {
		ua = ua[:i]
	}
	return strings.ToLower(ua)
}
