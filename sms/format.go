package sms

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// MaxReplyChars bounds one agent reply sent as SMS: the provider refuses a longer body
// (Twilio's limit is 1,600 characters), so a longer reply is cut rather than lost.
const MaxReplyChars = 1600

// Reply is an agent's Markdown reply made fit for SMS: plain text, at most MaxReplyChars.
func Reply(markdown string) string { return Cut(PlainText(markdown), MaxReplyChars) }

// PlainText removes the Markdown (and stray HTML) models write, because a phone shows it
// literally: "**Open** [today](https://x)" would arrive with its stars and brackets.
//
// Headings, emphasis, strikethrough, blockquote markers, code fences and inline-code
// backticks go, their text stays. Bullets ("- ", "* ", "+ ") all become "- " so lists still
// read as lists; numbered items keep "1. ". A link becomes "text (url)", or the URL alone
// when the text is the URL; an image becomes "alt url"; an autolink <https://x> becomes
// https://x. A link to a relative address or an anchor keeps only its text, since a phone
// cannot open it. Table rows lose their outer pipes and the separator row.
//
// Emphasis is only recognised at word edges and URLs are set aside before it is removed, so
// snake_case, ann_lee@example.com, 2 * 3 and https://x.com/a_b_c come through unchanged.
// Only common HTML tag names are stripped, so a placeholder like <first name> survives.
func PlainText(markdown string) string {
	f := &formatter{refs: map[string]string{}}
	src := strings.NewReplacer("\r\n", "\n", "\r", "\n", placeholderOpen, "", placeholderClose, "").Replace(markdown)
	lines := f.referenceDefinitions(strings.Split(src, "\n"))
	var out []string
	var fence string // the opening fence while inside a fenced code block
	fenceQuoted := false
	for _, line := range lines {
		quoted := false
		if fence == "" || fenceQuoted {
			line, quoted = stripQuote(line)
		}
		if fence != "" {
			if isFenceClose(line, fence) {
				fence = ""
				continue
			}
			out = append(out, line)
			continue
		}
		if m := fenceOpen.FindStringSubmatch(line); m != nil {
			fence, fenceQuoted = m[1], quoted
			continue
		}
		if l, ok := f.block(line); ok {
			out = append(out, l)
		}
	}
	text := f.restore(strings.Join(out, "\n"))
	lines = strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	text = manyNewlines.ReplaceAllString(strings.Join(lines, "\n"), "\n\n")
	return strings.Trim(text, "\n")
}

// Cut shortens text to at most n characters (runes: what a phone shows, not bytes). It
// cuts after the last whole sentence or line that fits, so the reply ends cleanly; when that
// would drop more than half of what fits, it cuts after the last whole word instead and
// appends "..." (three dots, not "…", which is outside the GSM-7 alphabet and would send a
// cut GSM-7 text as UCS-2, in twice the segments). Whole words keep URLs whole: a URL is only
// split when it alone fills n.
func Cut(text string, n int) string {
	r := []rune(text)
	if len(r) <= n {
		return text
	}
	if n <= 0 {
		return ""
	}
	if i := sentenceEnd(r, n); i >= n/2 {
		if s := strings.TrimRightFunc(string(r[:i]), unicode.IsSpace); s != "" {
			return s
		}
	}
	room := n - len(ellipsis)
	if room <= 0 {
		return string(r[:n])
	}
	i := room
	for i > 0 && !unicode.IsSpace(r[i]) {
		i--
	}
	s := strings.TrimRightFunc(string(r[:i]), unicode.IsSpace)
	if s == "" { // one word (a URL) longer than n: nothing to do but split it
		s = string(r[:room])
	}
	return s + ellipsis
}

const ellipsis = "..."

// sentenceEnd is the largest n <= limit such that r[:n] ends a sentence (., ! or ?, maybe
// followed by a closing quote or bracket, then a space) or a line; -1 if none.
func sentenceEnd(r []rune, limit int) int {
	for n := limit; n > 0; n-- {
		if r[n] == '\n' {
			return n
		}
		if !unicode.IsSpace(r[n]) {
			continue
		}
		end := n - 1
		if strings.ContainsRune(`"')]”’`, r[end]) && end > 0 {
			end--
		}
		if strings.ContainsRune(".!?", r[end]) {
			return n
		}
	}
	return -1
}

var (
	manyNewlines = regexp.MustCompile(`\n{3,}`)
	fenceOpen    = regexp.MustCompile("^\\s*(`{3,}|~{3,})")
	quoteMarker  = regexp.MustCompile(`^ {0,3}>[ \t]?`)
	heading      = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	rule         = regexp.MustCompile(`^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,}|=+[ \t]*)$`)
	bullet       = regexp.MustCompile(`^([ \t]*)[-*+][ \t]+`)
	tableSep     = regexp.MustCompile(`^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$`)
	spaces       = regexp.MustCompile(`[ \t]{2,}`)
	refDef       = regexp.MustCompile(`^ {0,3}\[([^\]]+)\]:[ \t]*<?([^\s>]+)>?(?:[ \t]+(?:"[^"]*"|'[^']*'|\([^)]*\)))?[ \t]*$`)
	autolink     = regexp.MustCompile(`<((?i:https?|ftp)://[^\s<>]+|(?i:mailto):[^\s<>]+|[^\s<>@]+@[^\s<>@]+\.[^\s<>@]+)>`)
	htmlAnchor   = regexp.MustCompile(`(?is)<a\s[^>]*?href\s*=\s*["']([^"']*)["'][^>]*>(.*?)</a\s*>`)
	htmlBreak    = regexp.MustCompile(`(?i)<br\s*/?>|</(?:p|div|li|tr|h[1-6])\s*>|<hr\s*/?>`)
	htmlTag      = regexp.MustCompile(`(?i)</?(?:a|abbr|b|blockquote|br|center|code|del|details|div|em|font|h[1-6]|hr|i|img|ins|kbd|li|mark|ol|p|pre|s|small|span|strike|strong|sub|summary|sup|table|tbody|td|tfoot|th|thead|tr|u|ul)\b[^<>]*>|<!--.*?-->`)
	bareURL      = regexp.MustCompile(`(?i)\b(?:https?://|www\.)[^\s<>\x{E000}\x{E001}]+`)
	placeholder  = regexp.MustCompile("\uE000([0-9]+)\uE001")
	entities     = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&apos;", "'", "&nbsp;", " ")
	// emphasis are the delimiter pairs, longest first so *** is not read as * and **. A
	// delimiter opens only after a non-word character (not itself: "**x:**y" is no *x:*) and
	// closes only before a non-word character, which is
	// what keeps snake_case, 2*3*4 and file_name_v2 intact; the text inside neither starts
	// nor ends with a space or the delimiter, which keeps "2 * 3" and a blank "___" intact.
	emphasis = func() []*regexp.Regexp {
		var res []*regexp.Regexp
		for _, d := range []string{`***`, `___`, `**`, `__`, `~~`, `*`, `_`} {
			q, c := regexp.QuoteMeta(d), `[^\s`+regexp.QuoteMeta(d[:1])+`]`
			res = append(res, regexp.MustCompile(`(^|[^\p{L}\p{N}`+regexp.QuoteMeta(d[:1])+`])`+q+`(`+c+`|`+c+`.*?`+c+`)`+q+`($|[^\p{L}\p{N}])`))
		}
		return res
	}()
)

// Placeholders stand in for text that later steps must not touch (code, URLs, escaped
// characters). They are private-use characters, removed from the input first.
const placeholderOpen, placeholderClose = "\uE000", "\uE001"

// formatter holds what PlainText set aside and the reference-link definitions it found.
type formatter struct {
	kept []string
	refs map[string]string
}

// keep sets s aside and returns its placeholder.
func (f *formatter) keep(s string) string {
	f.kept = append(f.kept, s)
	return placeholderOpen + strconv.Itoa(len(f.kept)-1) + placeholderClose
}

// restore puts back what keep set aside; a kept text may hold placeholders itself (an
// escaped character inside a URL), hence the loop.
func (f *formatter) restore(s string) string {
	for range 8 {
		if !strings.Contains(s, placeholderOpen) {
			break
		}
		s = placeholder.ReplaceAllStringFunc(s, func(m string) string {
			n, _ := strconv.Atoi(m[len(placeholderOpen) : len(m)-len(placeholderClose)])
			return f.kept[n]
		})
	}
	return s
}

// referenceDefinitions collects "[label]: url" lines, which define reference links, and
// drops them: their URLs are printed where the links are used.
func (f *formatter) referenceDefinitions(lines []string) []string {
	out := lines[:0:0]
	inFence := false
	for _, l := range lines {
		if fenceOpen.MatchString(l) {
			inFence = !inFence
		}
		if m := refDef.FindStringSubmatch(l); m != nil && !inFence {
			f.refs[strings.ToLower(m[1])] = m[2]
			continue
		}
		out = append(out, l)
	}
	return out
}

// stripQuote removes blockquote markers ("> ", also nested "> > ").
func stripQuote(line string) (string, bool) {
	quoted := false
	for {
		loc := quoteMarker.FindStringIndex(line)
		if loc == nil {
			return line, quoted
		}
		line, quoted = line[loc[1]:], true
	}
}

// isFenceClose reports whether line closes a block opened by fence: the same character, at
// least as many, nothing after.
func isFenceClose(line, fence string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= len(fence) && strings.Trim(t, fence[:1]) == ""
}

// block handles one line outside code: its block syntax, then its inline syntax. Lines
// that are only syntax (rules, setext underlines, table separators) are dropped.
func (f *formatter) block(line string) (string, bool) {
	if rule.MatchString(line) {
		return "", false
	}
	if m := heading.FindStringSubmatch(line); m != nil {
		line = m[1]
	}
	if m := bullet.FindStringSubmatch(line); m != nil {
		line = m[1] + "- " + line[len(m[0]):]
	}
	if strings.Contains(line, "|") {
		if tableSep.MatchString(line) {
			return "", false
		}
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "|") {
			line = spaces.ReplaceAllString(strings.Trim(t, "| \t"), " ")
		}
	}
	return f.inline(line), true
}

// inline removes inline Markdown from one line. The order matters: code and escapes first
// (their content is literal), then links (their URLs are set aside), then bare URLs, and
// only then emphasis, which can no longer reach inside code or URLs.
func (f *formatter) inline(s string) string {
	s = f.codeAndEscapes(s)
	s = autolink.ReplaceAllStringFunc(s, func(m string) string {
		u := m[1 : len(m)-1]
		if strings.HasPrefix(strings.ToLower(u), "mailto:") {
			u = u[len("mailto:"):]
		}
		return f.keep(entities.Replace(u))
	})
	s = htmlAnchor.ReplaceAllStringFunc(s, func(m string) string {
		sub := htmlAnchor.FindStringSubmatch(m)
		return f.link(htmlTag.ReplaceAllString(sub[2], ""), sub[1], false)
	})
	s = htmlBreak.ReplaceAllString(s, "\n")
	s = htmlTag.ReplaceAllString(s, "")
	s = f.links(s)
	s = f.bareURLs(s)
	for range 16 { // each pass removes at least one pair; a match consumes its neighbours
		before := s
		for _, re := range emphasis {
			s = re.ReplaceAllString(s, "$1$2$3")
		}
		if s == before {
			break
		}
	}
	return entities.Replace(s)
}

// codeAndEscapes sets aside inline code (without its backticks) and backslash-escaped
// punctuation, both of which are literal text.
func (f *formatter) codeAndEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case s[i] == '\\' && i+1 < len(s) && strings.IndexByte(asciiPunct, s[i+1]) >= 0:
			b.WriteString(f.keep(s[i+1 : i+2]))
			i += 2
		case s[i] == '`':
			n := backtickRun(s, i)
			end := closingRun(s, i+n, n)
			if end < 0 {
				b.WriteString(s[i : i+n])
				i += n
				continue
			}
			code := s[i+n : end]
			if len(code) > 2 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.TrimSpace(code) != "" {
				code = code[1 : len(code)-1]
			}
			b.WriteString(f.keep(code))
			i = end + n
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// asciiPunct are the characters a backslash escapes in Markdown.
const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

func backtickRun(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

// closingRun is where the next run of exactly n backticks at or after i starts, or -1.
func closingRun(s string, i, n int) int {
	for i < len(s) {
		if s[i] != '`' {
			i++
			continue
		}
		m := backtickRun(s, i)
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

// links rewrites inline links and images, [text](url) and ![alt](url), and reference links,
// [text][label], [text][] and [label], whose label was defined.
func (f *formatter) links(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		image := s[i] == '!' && i+1 < len(s) && s[i+1] == '['
		open := i
		if image {
			open++
		}
		if s[open] != '[' {
			b.WriteByte(s[i])
			i++
			continue
		}
		closing := matchingBracket(s, open)
		if closing < 0 {
			b.WriteString(s[i : open+1])
			i = open + 1
			continue
		}
		text := s[open+1 : closing]
		if url, end, ok := destination(s, closing+1); ok {
			b.WriteString(f.link(text, url, image))
			i = end
			continue
		}
		label, end := text, closing+1
		if strings.HasPrefix(s[end:], "[") {
			if c := matchingBracket(s, end); c >= 0 {
				if l := s[end+1 : c]; l != "" {
					label = l
				}
				end = c + 1
			}
		}
		if url, ok := f.refs[strings.ToLower(label)]; ok {
			b.WriteString(f.link(text, url, image))
			i = end
			continue
		}
		b.WriteString(s[i : open+1])
		i = open + 1
	}
	return b.String()
}

// matchingBracket is the index of the ']' closing the '[' at open, or -1.
func matchingBracket(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// destination parses a link's "(url "title")" starting at i: the URL (balanced parentheses
// allowed, or <...>), and the index after the closing parenthesis.
func destination(s string, i int) (string, int, bool) {
	if i >= len(s) || s[i] != '(' {
		return "", 0, false
	}
	i++
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	start, url := i, ""
	if i < len(s) && s[i] == '<' {
		end := strings.IndexByte(s[i:], '>')
		if end < 0 {
			return "", 0, false
		}
		url, i = s[i+1:i+end], i+end+1
	} else {
		depth := 0
	scan:
		for ; i < len(s); i++ {
			switch s[i] {
			case ' ', '\t':
				break scan
			case '(':
				depth++
			case ')':
				if depth == 0 {
					break scan
				}
				depth--
			}
		}
		url = s[start:i]
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i < len(s) && strings.IndexByte(`"'(`, s[i]) >= 0 { // a title, dropped
		closer := map[byte]byte{'"': '"', '\'': '\'', '(': ')'}[s[i]]
		end := strings.IndexByte(s[i+1:], closer)
		if end < 0 {
			return "", 0, false
		}
		i += end + 2
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	if i >= len(s) || s[i] != ')' {
		return "", 0, false
	}
	return url, i + 1, true
}

// link is how one link or image reads in a text message.
func (f *formatter) link(text, url string, image bool) string {
	text = strings.TrimSpace(f.links(text))
	url = entities.Replace(strings.TrimSpace(url))
	lower := strings.ToLower(url)
	for _, scheme := range []string{"mailto:", "tel:", "sms:"} {
		if strings.HasPrefix(lower, scheme) {
			url, lower = url[len(scheme):], lower[len(scheme):]
			if scheme != "mailto:" && digits(text) == digits(url) {
				return text // [+1 415 555 2671](tel:+14155552671): the number once, as written
			}
		}
	}
	if !openable(lower) {
		return text
	}
	kept := f.keep(url)
	switch {
	case text == "" || sameAddress(text, url):
		return kept
	case image:
		return text + " " + kept
	default:
		return text + " (" + kept + ")"
	}
}

func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// openable reports whether a phone can open url on its own: it has a scheme or starts with
// a host name, unlike "/pricing" or "#faq", which only make sense on the page they came from.
func openable(url string) bool {
	if url == "" || strings.ContainsAny(url[:1], "/#?.") {
		return false
	}
	if strings.Contains(url, "://") || strings.Contains(url, "@") || strings.TrimLeft(url, "+0123456789-. ()") == "" {
		return true
	}
	host, _, _ := strings.Cut(url, "/")
	return strings.Contains(host, ".")
}

// sameAddress reports whether a link's text is its URL, give or take the scheme, "www." and
// a trailing slash, so the address is printed once.
func sameAddress(text, url string) bool {
	norm := func(s string) string {
		s = strings.ToLower(strings.Trim(s, "*_~` "))
		for _, p := range []string{"https://", "http://", "www."} {
			s = strings.TrimPrefix(s, p)
		}
		return strings.TrimSuffix(s, "/")
	}
	return norm(text) == norm(url)
}

// bareURLs sets aside the URLs written without link syntax, so emphasis removal cannot
// take the underscores out of https://x.io/a_b_c.
func (f *formatter) bareURLs(s string) string {
	var b strings.Builder
	last := 0
	for _, loc := range bareURL.FindAllStringIndex(s, -1) {
		before := s[last:loc[0]]
		u := trimURL(s[loc[0]:loc[1]])
		// Emphasis around a URL ("**https://x.io/a_**") ends in the delimiters it began
		// with; only those are not the URL's own.
		if d := before[len(strings.TrimRight(before, "*_~")):]; d != "" && strings.HasSuffix(u, d) {
			u = trimURL(strings.TrimSuffix(u, d))
		}
		b.WriteString(before)
		b.WriteString(f.keep(u))
		last = loc[0] + len(u)
	}
	b.WriteString(s[last:])
	return b.String()
}

// trimURL drops what a bare URL's match took from the sentence after it: closing
// punctuation, and a ')' that closes a parenthesis opened before the URL.
func trimURL(u string) string {
	for {
		t := strings.TrimRight(u, `.,;:!?'"`)
		if strings.HasSuffix(t, ")") && strings.Count(t, "(") < strings.Count(t, ")") {
			t = t[:len(t)-1]
		}
		if t == u {
			return u
		}
		u = t
	}
}
