package knowledge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ledongthuc/pdf"
)

// PDFText extracts the text of a PDF, page by page (pages are paragraphs apart). Lines are
// rebuilt from the positions of the glyphs, so text placed line by line (as most producers
// write it) keeps its line breaks and word spaces. An encrypted PDF, or one without
// extractable text (a scan), is an error that says so. The reader is pure Go; a malformed
// file that makes it panic is reported as an error, never a crash.
func PDFText(data []byte) (doc Document, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = Document{}, fmt.Errorf("the PDF could not be read: %v", r)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if errors.Is(err, pdf.ErrInvalidPassword) {
		return Document{}, errors.New("the PDF is encrypted; upload a copy without a password")
	}
	if err != nil {
		return Document{}, fmt.Errorf("the PDF could not be read: %w", err)
	}
	if info := r.Trailer().Key("Info"); !info.IsNull() {
		doc.Title = info.Key("Title").Text()
	}
	var pages []string
	total := 0
	for i := 1; i <= r.NumPage() && total < maxPDFText; i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		if contentSize(p.V.Key("Contents")) > maxPageContent {
			return Document{}, fmt.Errorf("page %d of the PDF holds more than %d MiB of drawing instructions; it is not read", i, maxPageContent>>20)
		}
		text := pageText(p)
		if strings.TrimSpace(text) == "" {
			text, _ = p.GetPlainText(nil)
		}
		if t := strings.TrimSpace(text); t != "" {
			pages = append(pages, t)
			total += len(t)
		}
	}
	if len(pages) == 0 {
		return Document{}, errors.New("the PDF has no extractable text (a scanned document needs OCR first)")
	}
	doc.Text = strings.Join(pages, "\n\n")
	return doc, nil
}

// A PDF is small on the wire and may be huge once its streams are inflated: a page whose
// content streams inflate to more than maxPageContent is refused before it is parsed (the
// reader keeps a page's glyphs in memory), and pages are read until maxPDFText bytes of text.
const (
	maxPageContent = 16 << 20
	maxPDFText     = 8 << 20
)

// contentSize is the inflated size of a page's content streams (one stream or an array of
// them), counted up to just past maxPageContent without keeping the bytes.
func contentSize(v pdf.Value) int64 {
	streams := []pdf.Value{v}
	if v.Kind() == pdf.Array {
		streams = streams[:0]
		for i := 0; i < v.Len(); i++ {
			streams = append(streams, v.Index(i))
		}
	}
	var n int64
	for _, s := range streams {
		if s.Kind() != pdf.Stream {
			continue
		}
		rc := s.Reader()
		m, _ := io.Copy(io.Discard, io.LimitReader(rc, maxPageContent+1-n))
		_ = rc.Close()
		if n += m; n > maxPageContent {
			break
		}
	}
	return n
}

// pageText joins a page's glyphs in content order: a new line where the baseline moves by
// more than half the font size (a blank line, a new paragraph, where it moves by two lines),
// a space where a glyph starts clearly after the previous one ends.
func pageText(p pdf.Page) string {
	var b strings.Builder
	var prev *pdf.Text
	for _, t := range p.Content().Text {
		if prev != nil {
			size := math.Max(math.Abs(prev.FontSize), 1)
			dy := math.Abs(t.Y - prev.Y)
			switch {
			case dy > 2*size:
				b.WriteString("\n\n")
			case dy > size/2:
				b.WriteString("\n")
			case t.X-(prev.X+prev.W) > size*0.2 && !strings.HasSuffix(prev.S, " ") && !strings.HasPrefix(t.S, " "):
				b.WriteString(" ")
			}
		}
		b.WriteString(t.S)
		t := t
		prev = &t
	}
	return b.String()
}
