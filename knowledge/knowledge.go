// Package knowledge turns the documents of an agent's knowledge sources into text to index:
// uploaded files (plain text, Markdown, HTML, PDF), the answer of an API source (JSON or
// text), and the text of a manual_text source. It reads bytes and answers text; storing,
// chunking into the full-text index and the source's states are the caller's (package manage,
// whose ingestion job uses it), and every URL it fetches goes through the caller's guard.
package knowledge

import (
	"errors"
	"fmt"
	"mime"
	"path"
	"strings"
	"unicode/utf8"

	"switchboard/crawl"
)

// The content types an upload may have.
const (
	TextPlain    = "text/plain"
	TextMarkdown = "text/markdown"
	TextHTML     = "text/html"
	PDF          = "application/pdf"
)

// ContentTypes lists the content types an upload may have.
func ContentTypes() []string { return []string{TextPlain, TextMarkdown, TextHTML, PDF} }

// ChunkChars is the size of the chunks the index stores, as for crawled pages.
const ChunkChars = 1500

// Chunks splits a document's text into the chunks the index stores (crawl's chunker, so
// every source type is cut the same way).
func Chunks(text string) []string { return crawl.Chunks(text, ChunkChars) }

// Document is extracted text: a title (may be empty) and paragraphs separated by blank
// lines.
type Document struct {
	Title string
	Text  string
}

// ErrUnsupportedType is wrapped by the error of a content type that is not accepted.
var ErrUnsupportedType = errors.New("unsupported content type")

// extensions maps file name extensions to the content type they imply, for clients that send
// application/octet-stream (curl -F does for .md).
var extensions = map[string]string{
	".txt": TextPlain, ".text": TextPlain,
	".md": TextMarkdown, ".markdown": TextMarkdown,
	".html": TextHTML, ".htm": TextHTML,
	".pdf": PDF,
}

// ContentTypeFor decides an upload's content type from the declared one (parameters such as
// charset are dropped) and, when none or application/octet-stream is declared, the file
// name's extension. text/x-markdown is Markdown. Any other type is refused.
func ContentTypeFor(declared, filename string) (string, error) {
	mt, _, err := mime.ParseMediaType(declared)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(declared))
	}
	switch mt {
	case "", "application/octet-stream":
		if ct, ok := extensions[strings.ToLower(path.Ext(filename))]; ok {
			return ct, nil
		}
		if mt == "" {
			return "", fmt.Errorf("%w: none was given, and the file name %q does not say (.txt, .md, .html or .pdf)", ErrUnsupportedType, filename)
		}
	case "text/x-markdown":
		return TextMarkdown, nil
	case "application/xhtml+xml":
		return TextHTML, nil
	}
	for _, ct := range ContentTypes() {
		if mt == ct {
			return ct, nil
		}
	}
	return "", fmt.Errorf("%w: %s; upload text/plain, text/markdown, text/html or application/pdf", ErrUnsupportedType, mt)
}

// CleanFilename normalizes an upload's name, or a source's path naming one, to the form they
// are matched in: a relative slash-separated path without `.` or `..` segments
// (`./kb\faq.md` is `kb/faq.md`). It refuses a name that is empty, climbs out (`../x`), holds
// control characters or is longer than 1024 bytes.
func CleanFilename(name string) (string, error) {
	name = strings.TrimSpace(strings.ReplaceAll(name, `\`, "/"))
	if name == "" {
		return "", errors.New("a file name is required")
	}
	if !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", errors.New("the file name must be UTF-8 text without control characters")
	}
	clean := path.Clean("/" + name)[1:]
	if clean == "" || strings.HasPrefix(name, "../") || strings.Contains(name, "/../") || strings.HasSuffix(name, "/..") || name == ".." {
		return "", fmt.Errorf("the file name %q must be a relative path to a file, without `..`", name)
	}
	if len(clean) > 1024 {
		return "", errors.New("the file name must be at most 1024 bytes long")
	}
	return clean, nil
}

// Extract reads a file of one of ContentTypes as text. The title is the document's own (an
// HTML <title>, a Markdown heading, a PDF's Title) or the file's base name.
func Extract(contentType, filename string, data []byte) (Document, error) {
	var doc Document
	var err error
	switch contentType {
	case TextPlain:
		var text string
		text, err = plainText(data)
		doc = Document{Text: text}
	case TextMarkdown:
		var text string
		if text, err = plainText(data); err == nil {
			doc = MarkdownText(text)
		}
	case TextHTML:
		doc.Title, doc.Text, err = crawl.HTMLText(data, "text/html")
	case PDF:
		doc, err = PDFText(data)
	default:
		return Document{}, fmt.Errorf("%w: %s", ErrUnsupportedType, contentType)
	}
	if err != nil {
		return Document{}, err
	}
	doc.Text = strings.ToValidUTF8(strings.ReplaceAll(doc.Text, "\x00", ""), "\uFFFD")
	doc.Title = strings.Join(strings.Fields(strings.ToValidUTF8(strings.ReplaceAll(doc.Title, "\x00", ""), "")), " ")
	if doc.Title == "" {
		doc.Title = path.Base(filename)
	}
	if strings.TrimSpace(doc.Text) == "" {
		return Document{}, errors.New("the document has no text to index")
	}
	return doc, nil
}

// plainText reads bytes as UTF-8 text (a byte-order mark is dropped). Bytes that are not UTF-8
// are refused rather than guessed at.
func plainText(data []byte) (string, error) {
	data = trimBOM(data)
	if !utf8.Valid(data) {
		return "", errors.New("the file is not UTF-8 text; save it as UTF-8 and upload it again")
	}
	return strings.ReplaceAll(string(data), "\r\n", "\n"), nil
}

func trimBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}
