package crawl

import (
	"bytes"
	"io"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// extracted is what a page yields: its title and visible text, its links, and its robots
// directives.
type extracted struct {
	title    string
	text     string
	links    []*url.URL // absolute, normalized, http(s) only, without rel=nofollow ones; any host
	noindex  bool
	nofollow bool
}

// invisible elements: their text is not part of the page's content. Links inside them (nav,
// footer) are still followed.
var invisible = map[atom.Atom]bool{
	atom.Head: true, atom.Script: true, atom.Style: true, atom.Noscript: true,
	atom.Template: true, atom.Svg: true, atom.Nav: true, atom.Footer: true,
	atom.Iframe: true, atom.Object: true, atom.Canvas: true,
}

// blocks break paragraphs before and after them.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Li: true, atom.Br: true, atom.Tr: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Section: true, atom.Article: true, atom.Main: true, atom.Header: true, atom.Aside: true,
	atom.Ul: true, atom.Ol: true, atom.Dl: true, atom.Dt: true, atom.Dd: true,
	atom.Table: true, atom.Caption: true, atom.Blockquote: true, atom.Pre: true,
	atom.Figure: true, atom.Figcaption: true, atom.Form: true, atom.Fieldset: true,
	atom.Legend: true, atom.Hr: true, atom.Address: true, atom.Details: true, atom.Summary: true,
	atom.Body: true,
}

// extract reads a parsed page fetched from page. agent is the bot's product token, for
// <meta name="switchboardbot" ...>.
func extract(doc *html.Node, page *url.URL, agent string) extracted {
	var ex extracted
	var tb textBuilder
	var hrefs []string
	base := page
	gotTitle, gotBase := false, false
	hidden, pre, template := 0, 0, 0

	enter := func(n *html.Node) bool {
		switch n.Type {
		case html.TextNode:
			if hidden == 0 {
				tb.text(n.Data, pre > 0)
			}
			return false
		case html.ElementNode:
		default:
			return true
		}
		if hides(n) {
			hidden++
		}
		if n.Namespace != "" { // inside <svg> or <math>: no HTML semantics
			return true
		}
		switch n.DataAtom {
		case atom.Title:
			if !gotTitle {
				gotTitle = true
				ex.title = collapse(childText(n))
			}
		case atom.Meta:
			if name := strings.ToLower(strings.TrimSpace(attr(n, "name"))); name == "robots" || (agent != "" && name == agent) {
				ni, nf := robotsDirectives(attr(n, "content"))
				ex.noindex = ex.noindex || ni
				ex.nofollow = ex.nofollow || nf
			}
		case atom.Base:
			if href, found := attrOK(n, "href"); found && !gotBase {
				gotBase = true
				if b, err := page.Parse(strings.TrimSpace(href)); err == nil {
					if b, ok := normalize(b); ok {
						base = b
					}
				}
			}
		case atom.A, atom.Area:
			if href, found := attrOK(n, "href"); found && template == 0 && !hasToken(attr(n, "rel"), "nofollow") {
				hrefs = append(hrefs, href)
			}
		case atom.Td, atom.Th:
			tb.space()
		case atom.Pre:
			pre++
		case atom.Template:
			template++
		}
		if blocks[n.DataAtom] {
			tb.breakPara()
		}
		return true
	}
	leave := func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		if hides(n) {
			hidden--
		}
		if n.Namespace != "" {
			return
		}
		switch n.DataAtom {
		case atom.Pre:
			pre--
		case atom.Template:
			template--
		case atom.Td, atom.Th:
			tb.space()
		}
		if blocks[n.DataAtom] {
			tb.breakPara()
		}
	}
	walk(doc, enter, leave)
	tb.breakPara()
	ex.text = strings.Join(tb.paras, "\n\n")

	for _, href := range hrefs {
		ref, err := base.Parse(strings.TrimSpace(href))
		if err != nil {
			continue
		}
		if u, ok := normalize(ref); ok {
			ex.links = append(ex.links, u)
		}
	}
	return ex
}

// walk visits the tree in document order without recursion (pages can nest deeply): enter is
// called on the way down and says whether to visit the children, leave on the way up.
func walk(root *html.Node, enter func(*html.Node) bool, leave func(*html.Node)) {
	n := root
	for {
		if enter(n) && n.FirstChild != nil {
			n = n.FirstChild
			continue
		}
		for {
			leave(n)
			if n == root {
				return
			}
			if n.NextSibling != nil {
				n = n.NextSibling
				break
			}
			n = n.Parent
		}
	}
}

// hides reports whether an element's text is not shown: an invisible element, or one marked
// hidden or display:none.
func hides(n *html.Node) bool {
	if invisible[n.DataAtom] && (n.Namespace == "" || n.DataAtom == atom.Svg) {
		return true
	}
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			if a.Namespace == "" {
				return true
			}
		case "style":
			if strings.Contains(strings.ToLower(strings.Join(strings.Fields(a.Val), "")), "display:none") {
				return true
			}
		}
	}
	return false
}

func attr(n *html.Node, key string) string {
	v, _ := attrOK(n, key)
	return v
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func childText(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// hasToken reports whether a space- or comma-separated list holds tok, case-insensitively.
func hasToken(list, tok string) bool {
	for _, f := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		if strings.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

// robotsDirectives reads a robots meta content or X-Robots-Tag value ("noindex, nofollow",
// "none").
func robotsDirectives(content string) (noindex, nofollow bool) {
	none := hasToken(content, "none")
	return none || hasToken(content, "noindex"), none || hasToken(content, "nofollow")
}

// headerRobots reads X-Robots-Tag headers; a value may be aimed at one bot ("otherbot: noindex"),
// and then only counts when that bot is agent.
func headerRobots(values []string, agent string) (noindex, nofollow bool) {
	for _, v := range values {
		if head, rest, found := strings.Cut(v, ":"); found {
			h := strings.ToLower(strings.TrimSpace(head))
			switch {
			case strings.ContainsAny(h, ", \t"), h == "unavailable_after", strings.HasPrefix(h, "max-"):
				// a directive with an argument, not a bot name
			case h != agent:
				continue
			default:
				v = rest
			}
		}
		ni, nf := robotsDirectives(v)
		noindex = noindex || ni
		nofollow = nofollow || nf
	}
	return noindex, nofollow
}

// textBuilder accumulates visible text: whitespace collapsed within a paragraph, paragraphs
// kept apart. Text inside <pre> keeps its line breaks.
type textBuilder struct {
	paras []string
	cur   strings.Builder
	gap   bool // whitespace seen since the last word
}

func (b *textBuilder) text(s string, pre bool) {
	if pre {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		if b.gap && b.cur.Len() > 0 {
			b.cur.WriteByte(' ')
		}
		b.cur.WriteString(s)
		b.gap = false
		return
	}
	words := strings.Fields(s)
	if len(words) == 0 {
		b.gap = b.gap || s != ""
		return
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	b.gap = b.gap || unicode.IsSpace(first)
	for i, w := range words {
		if (i > 0 || b.gap) && b.cur.Len() > 0 {
			b.cur.WriteByte(' ')
		}
		b.cur.WriteString(w)
	}
	b.gap = unicode.IsSpace(last)
}

// space separates what follows from what precedes, as between table cells.
func (b *textBuilder) space() { b.gap = true }

func (b *textBuilder) breakPara() {
	if t := strings.TrimSpace(b.cur.String()); t != "" {
		b.paras = append(b.paras, t)
	}
	b.cur.Reset()
	b.gap = false
}

// HTMLText extracts the title and visible text of an HTML document, as the crawler does for
// each page (the same invisible elements, the same paragraphs), for HTML that was not
// crawled: uploaded files and API answers. contentType may name a charset; the document is
// decoded to UTF-8 from it, a BOM or a <meta charset>.
func HTMLText(body []byte, contentType string) (title, text string, err error) {
	if contentType == "" {
		contentType = "text/html"
	}
	var r io.Reader = bytes.NewReader(body)
	if cr, err := charset.NewReader(r, contentType); err == nil {
		r = cr
	} else {
		r = bytes.NewReader(body)
	}
	doc, err := html.Parse(r)
	if err != nil {
		return "", "", err
	}
	ex := extract(doc, &url.URL{Scheme: "https", Host: "localhost", Path: "/"}, "")
	return ex.title, ex.text, nil
}
