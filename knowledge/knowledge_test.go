package knowledge_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/knowledge"
	"switchboard/knowledge/knowledgetest"
	"switchboard/netguard"
)

func TestContentTypeFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ declared, name, want string }{
		{"text/plain; charset=utf-8", "notes.txt", knowledge.TextPlain},
		{"text/markdown", "faq", knowledge.TextMarkdown},
		{"text/x-markdown", "faq.md", knowledge.TextMarkdown},
		{"TEXT/HTML", "page.html", knowledge.TextHTML},
		{"application/pdf", "guide.pdf", knowledge.PDF},
		{"application/octet-stream", "kb/faq.MD", knowledge.TextMarkdown},
		{"", "guide.pdf", knowledge.PDF},
		{"", "page.htm", knowledge.TextHTML},
	} {
		got, err := knowledge.ContentTypeFor(c.declared, c.name)
		require.NoError(t, err, c)
		require.Equal(t, c.want, got, c)
	}
	for _, c := range []struct{ declared, name string }{
		{"application/zip", "kb.zip"}, {"image/png", "logo.png"}, {"application/octet-stream", "kb.docx"}, {"", "README"},
	} {
		_, err := knowledge.ContentTypeFor(c.declared, c.name)
		require.ErrorIs(t, err, knowledge.ErrUnsupportedType, c)
	}
}

func TestCleanFilename(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"kb/faq.md": "kb/faq.md", "./kb//faq.md": "kb/faq.md", `kb\faq.md`: "kb/faq.md", "/kb/faq.md": "kb/faq.md",
		" guide.pdf ": "guide.pdf", "kb/./faq.md": "kb/faq.md",
	} {
		got, err := knowledge.CleanFilename(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "  ", "../etc/passwd", "kb/a/../faq.md", "kb/../../x", "..", "a\x00b", "tab\there", strings.Repeat("a", 1025)} {
		_, err := knowledge.CleanFilename(in)
		require.Error(t, err, "%q", in)
	}
}

func TestMarkdownText(t *testing.T) {
	t.Parallel()
	doc := knowledge.MarkdownText(`---
title: "Returns policy"
layout: page
---
# Returns

You can return **unworn** items within [30 days](https://northwind.example/returns) of delivery.

- Refunds go to the original card
- ` + "`Store credit`" + ` is instant

| Item | Window |
|------|--------|
| Shoes | 60 days |

> Sale items are final.

` + "```" + `
code stays as it is
` + "```" + `
`)
	require.Equal(t, "Returns policy", doc.Title)
	for _, want := range []string{
		"Returns\n", "You can return unworn items within 30 days of delivery.", "Refunds go to the original card",
		"Store credit is instant", "Shoes 60 days", "Sale items are final.", "code stays as it is",
	} {
		require.Contains(t, doc.Text, want)
	}
	for _, gone := range []string{"**", "](", "layout", "|", "---", "```", "> "} {
		require.NotContains(t, doc.Text, gone)
	}
	require.Equal(t, "Hours", knowledge.MarkdownText("intro\n\n## Hours ##\nNine to five").Title)
}

func TestJSONText(t *testing.T) {
	t.Parallel()
	text, err := knowledge.JSONText([]byte(`{"faq":[{"question":"When are you open?","answer":"Nine   to five","tags":["hours"],"draft":false,"views":12,"extra":null}],"updated":"2026-01-02"}`))
	require.NoError(t, err)
	require.Equal(t, "faq[0].question: When are you open?\nfaq[0].answer: Nine to five\nfaq[0].tags[0]: hours\nfaq[0].draft: false\nfaq[0].views: 12\n\nupdated: 2026-01-02", text)

	text, err = knowledge.JSONText([]byte(`[{"q":"a"},{"q":"b"}]`))
	require.NoError(t, err)
	require.Equal(t, "[0].q: a\n\n[1].q: b", text, "each item of a top-level array is a paragraph")

	text, err = knowledge.JSONText([]byte(`"just text"`))
	require.NoError(t, err)
	require.Equal(t, "value: just text", text)

	for _, bad := range []string{`{"a":`, `{"a":1} {"b":2}`, strings.Repeat("[", 100) + strings.Repeat("]", 100)} {
		_, err := knowledge.JSONText([]byte(bad))
		require.Error(t, err, bad)
	}
}

func TestExtract(t *testing.T) {
	t.Parallel()
	doc, err := knowledge.Extract(knowledge.TextPlain, "kb/notes.txt", []byte("\xef\xbb\xbfLine one\r\nLine two"))
	require.NoError(t, err)
	require.Equal(t, knowledge.Document{Title: "notes.txt", Text: "Line one\nLine two"}, doc)

	doc, err = knowledge.Extract(knowledge.TextHTML, "page.html", []byte(`<html><head><title>Shipping</title><style>p{}</style></head>
<body><nav>Menu</nav><h1>Shipping</h1><p>We ship worldwide in 3 days.</p><script>var x;</script></body></html>`))
	require.NoError(t, err)
	require.Equal(t, "Shipping", doc.Title)
	require.Equal(t, "Shipping\n\nWe ship worldwide in 3 days.", doc.Text)

	_, err = knowledge.Extract(knowledge.TextPlain, "latin1.txt", []byte("caf\xe9"))
	require.ErrorContains(t, err, "not UTF-8")
	_, err = knowledge.Extract(knowledge.TextMarkdown, "empty.md", []byte("  \n\n"))
	require.ErrorContains(t, err, "no text")
	_, err = knowledge.Extract("image/png", "logo.png", []byte("x"))
	require.ErrorIs(t, err, knowledge.ErrUnsupportedType)
}

func TestPDFText(t *testing.T) {
	t.Parallel()
	data := knowledgetest.PDF("Size guide (2026)",
		[]string{"Northwind size guide", "Shoes run half a size small;", "order one size up."},
		[]string{"Gloves: measure around the palm (in cm)."})
	doc, err := knowledge.Extract(knowledge.PDF, "uploads/size-guide.pdf", data)
	require.NoError(t, err)
	require.Equal(t, "Size guide (2026)", doc.Title)
	require.Equal(t, "Northwind size guide\nShoes run half a size small;\norder one size up.\n\nGloves: measure around the palm (in cm).", doc.Text)

	_, err = knowledge.Extract(knowledge.PDF, "broken.pdf", []byte("%PDF-1.4\nnot really a pdf"))
	require.ErrorContains(t, err, "could not be read")
	_, err = knowledge.Extract(knowledge.PDF, "blank.pdf", knowledgetest.PDF("Blank", []string{}))
	require.ErrorContains(t, err, "no extractable text")
}

// guardedFetcher fetches as the ingestion job does, through a guard.
func guardedFetcher(allowPrivate bool) knowledge.Fetcher {
	g := netguard.Guard{AllowPrivate: allowPrivate}
	return knowledge.Fetcher{Client: g.Client(5 * time.Second), CheckURL: g.CheckURL, MaxBytes: 1024, Timeout: 5 * time.Second}
}

func TestFetch(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/faq.json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"hours":"Mon-Fri 9-17"}`))
		case "/notes":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("Parking is free after 6pm."))
		case "/untyped":
			_, _ = w.Write([]byte(`[{"q":"wifi","a":"ask the front desk"}]`))
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte(strings.Repeat("x", 2048)))
		case "/moved":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/image":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write([]byte("\x89PNG"))
		case "/busy":
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case "/slow":
			<-release
		default:
			http.Error(w, "nope", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: the slow handler returns, then the server closes
	ctx := context.Background()
	f := guardedFetcher(true)

	doc, err := f.Fetch(ctx, srv.URL+"/faq.json")
	require.NoError(t, err)
	require.Equal(t, "hours: Mon-Fri 9-17", doc.Text)
	doc, err = f.Fetch(ctx, srv.URL+"/notes")
	require.NoError(t, err)
	require.Equal(t, "Parking is free after 6pm.", doc.Text)
	doc, err = f.Fetch(ctx, srv.URL+"/untyped")
	require.NoError(t, err)
	require.Equal(t, "[0].q: wifi\n[0].a: ask the front desk", doc.Text)

	for path, want := range map[string]string{
		"/big": "larger than 1024 bytes", "/moved": "redirect", "/image": "image/png", "/missing": "HTTP 404",
	} {
		_, err := f.Fetch(ctx, srv.URL+path)
		require.ErrorContains(t, err, want, path)
	}
	short := f
	short.Timeout = 50 * time.Millisecond // the server never answers: any timeout ends it
	_, err = short.Fetch(ctx, srv.URL+"/slow")
	require.ErrorContains(t, err, "no answer within")
	var transient *knowledge.TransientError
	require.ErrorAs(t, err, &transient, "a timeout may pass")
	_, err = f.Fetch(ctx, srv.URL+"/busy")
	require.ErrorAs(t, err, &transient, "a 503 may pass")
	_, err = f.Fetch(ctx, srv.URL+"/missing")
	require.False(t, errors.As(err, &transient), "a 404 will not")
}

func TestFetchRefusesPrivateAddressesUnlessAllowed(t *testing.T) {
	t.Parallel()
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { requests++ }))
	t.Cleanup(srv.Close)
	f := guardedFetcher(false)
	for _, u := range []string{srv.URL + "/faq.json", "https://127.0.0.1/faq", "https://169.254.169.254/latest/meta-data/", "https://[::1]/"} {
		_, err := f.Fetch(context.Background(), u)
		require.True(t, errors.Is(err, netguard.ErrBlocked), "%s: %v", u, err)
	}
	require.Zero(t, requests)
}

// A small file whose page inflates to more than 16 MiB is refused before it is parsed.
func TestPDFInflationBomb(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("(aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa) Tj\n", (17<<20)/52)
	data := knowledgetest.PDF("Bomb", []string{big})
	require.Less(t, len(data), 1<<20, "compressed, the file is small")
	_, err := knowledge.Extract(knowledge.PDF, "bomb.pdf", data)
	require.ErrorContains(t, err, "more than 16 MiB of drawing instructions")
}
