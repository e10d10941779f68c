package crawl

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// robots holds the robots.txt rules that apply to the bot on the crawled host (RFC 9309 as
// Google reads it). The zero value, and a nil *robots, allow everything.
//
// Why our own parser and matcher rather than a library: the common Go library,
// github.com/temoto/robotstxt (v1.1.2 of March 2021, before RFC 9309), reads 7 of the 9 cases
// of TestRobotsRulesRFC9309 otherwise (checked by running that test against it): it keeps the
// first of two equal rules where the RFC prefers Allow; one rule before the first
// User-agent line makes it reject the whole file; it compares a group's whole user-agent value
// as a prefix of ours (so "SwitchboardBot/2.0" does not name us and "switch" does); it ranks
// wildcard rules by the length of the regular expression it builds; and it compares raw
// bytes, not percent-encoded octets. Each of those makes the crawler fetch what a site asked
// it not to, or skip what it allowed. Google's own matcher has no Go port in the module proxy
// (github.com/jimsmart/grobotstxt is not served). What is here is the RFC's grammar (groups,
// longest match, Allow on ties, "*" and "$") and nothing else: Crawl-delay is not part of
// RFC 9309 and is not read (Config.Delay is the politeness delay), nor are Sitemap lines.
type robots struct {
	disallowAll bool // robots.txt answered 5xx or 429: the whole site is off limits
	status      int  // the HTTP status behind disallowAll
	rules       []robotsRule
}

type robotsRule struct {
	allow   bool
	pattern string // starts with "/" or "*"; "*" matches any run of characters, a final "$" anchors the end
}

// loadRobots fetches /robots.txt of the start URL's host (same-host redirects followed). A
// missing or unreadable robots.txt (4xx, redirect elsewhere, refused by CheckURL) allows
// everything; 5xx and 429 disallow everything. Only a transport failure is an error: the host
// is then unreachable.
//
// Why these status rules: RFC 9309 §2.3.1.3 says a robots.txt that is "unavailable" (4xx)
// means the crawler may access any resource, and §2.3.1.4 that an "unreachable" one (5xx)
// means it must assume a complete disallow, since the site may be failing under load. 429 is
// a request to back off, so it is read as unreachable, as Google does. §2.3.1.2 asks to follow
// at least five redirects; we follow maxRedirects on the same host only, since an off-host
// robots.txt does not speak for this host.
func (c *crawler) loadRobots(ctx context.Context, start *url.URL) error {
	c.robots = &robots{}
	cur := &url.URL{Scheme: start.Scheme, Host: start.Host, Path: "/robots.txt"}
	for hop := 0; ; hop++ {
		if err := c.check(ctx, cur); err != nil {
			return ctx.Err() // nil unless cancelled: an unreadable robots.txt allows everything
		}
		resp, err := c.get(ctx, cur, "text/plain,*/*;q=0.1")
		if err != nil {
			return c.fatal(ctx, fmt.Errorf("crawl: fetching %s: %w", cur, err))
		}
		switch code := resp.StatusCode; {
		case isRedirect(code):
			discard(resp)
			if hop == maxRedirects {
				return nil
			}
			next, err := redirectTarget(cur, resp)
			if err != nil || !c.inScope(next) {
				return nil //nolint:nilerr // a broken or off-site redirect is an unreadable robots.txt: it allows everything
			}
			cur = next
		case code >= 200 && code <= 299:
			body, err := io.ReadAll(io.LimitReader(resp.Body, maxRobotsBytes))
			resp.Body.Close()
			if err != nil {
				return c.fatal(ctx, fmt.Errorf("crawl: reading %s: %w", cur, err))
			}
			c.robots = parseRobots(string(body), c.agent)
			return nil
		case code == http.StatusTooManyRequests || code >= 500:
			discard(resp)
			c.robots = &robots{disallowAll: true, status: code}
			return nil
		default:
			discard(resp)
			return nil
		}
	}
}

// parseRobots keeps the rules of the groups naming agent (the bot's product token, lower
// case), or, when no group names it, those of the "*" groups.
func parseRobots(body, agent string) *robots {
	type group struct {
		agents []string
		rules  []robotsRule
	}
	var groups []*group
	var cur *group
	inAgents := false // the previous line was a user-agent line: a further one joins the group
	body = strings.TrimPrefix(body, "\uFEFF")
	body = strings.ReplaceAll(body, "\r\n", "\n")
	for line := range strings.SplitSeq(strings.ReplaceAll(body, "\r", "\n"), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		k, v, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		switch k {
		case "user-agent":
			if cur == nil || !inAgents {
				cur = &group{}
				groups = append(groups, cur)
			}
			cur.agents = append(cur.agents, agentToken(v))
			inAgents = true
		case "allow", "disallow":
			inAgents = false
			if cur == nil || v == "" { // a rule outside a group, or "Disallow:" (allows everything)
				continue
			}
			if v[0] != '/' && v[0] != '*' {
				v = "/" + v
			}
			cur.rules = append(cur.rules, robotsRule{allow: k == "allow", pattern: normEscapes(v)})
		}
	}
	var mine, star []robotsRule
	named := false
	for _, g := range groups {
		for _, a := range g.agents {
			if a == agent && agent != "" {
				mine = append(mine, g.rules...)
				named = true
				break
			}
			if a == "*" {
				star = append(star, g.rules...)
				break
			}
		}
	}
	if named {
		return &robots{rules: mine}
	}
	return &robots{rules: star}
}

func agentToken(v string) string {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "*" {
		return v
	}
	if i := strings.IndexAny(v, "/ \t"); i >= 0 {
		v = v[:i]
	}
	return v
}

// allowed applies the longest matching rule; on a tie Allow wins; no match allows.
func (r *robots) allowed(u *url.URL) bool {
	if r == nil {
		return true
	}
	if r.disallowAll {
		return false
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if path == "/robots.txt" {
		return true
	}
	if u.RawQuery != "" || u.ForceQuery {
		path += "?" + u.RawQuery
	}
	path = normEscapes(path)
	best, allow := -1, true
	for _, rule := range r.rules {
		n := len(rule.pattern)
		if n < best || (n == best && allow) || !matchRobots(rule.pattern, path) {
			continue
		}
		best, allow = n, rule.allow
	}
	return allow
}

func (r *robots) reason() string {
	if r != nil && r.disallowAll {
		return fmt.Sprintf("robots.txt answered HTTP %d, so the site is off limits", r.status)
	}
	return "a robots.txt rule"
}

// matchRobots reports whether pattern matches a prefix of path ("*" any run, final "$" the end).
func matchRobots(pattern, path string) bool {
	if p, anchored := strings.CutSuffix(pattern, "$"); anchored {
		return glob(p, path)
	}
	return glob(pattern+"*", path)
}

// glob matches s against p where '*' matches any run of bytes, with the classic
// backtrack-to-the-last-star loop (linear space, no recursion).
func glob(p, s string) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && p[pi] == s[si]:
			pi++
			si++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// normEscapes percent-encodes bytes outside ASCII and upper-cases the hex digits of existing
// escapes, so "/ü", "/%c3%bc" and "/%C3%BC" compare equal.
func normEscapes(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch >= 0x80 || ch == ' ':
			fmt.Fprintf(&b, "%%%02X", ch)
		case ch == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte('%')
			b.WriteString(strings.ToUpper(s[i+1 : i+3]))
			i += 2
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
