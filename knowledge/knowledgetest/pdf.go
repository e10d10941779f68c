// Package knowledgetest makes documents for tests of knowledge ingestion.
package knowledgetest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
)

// PDF writes a real PDF 1.4 file: one page per item of pages, each line of a page set in
// Helvetica 12 pt, one line under the other (Td and T*), in a compressed (FlateDecode)
// content stream; title goes into the document information dictionary. It is what simple
// producers write, and what PDF readers must read.
func PDF(title string, pages ...[]string) []byte {
	var objs []string
	n := len(pages)
	// 1 catalog, 2 pages, 3 font, 4 info, then a page and its contents per page.
	kids := make([]string, n)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 5+2*i)
	}
	objs = append(objs,
		"<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
		fmt.Sprintf("<< /Title (%s) /Producer (switchboard knowledgetest) >>", escape(title)),
	)
	for i, lines := range pages {
		var content strings.Builder
		content.WriteString("BT\n/F1 12 Tf\n14 TL\n72 720 Td\n")
		for j, l := range lines {
			if j > 0 {
				content.WriteString("T*\n")
			}
			fmt.Fprintf(&content, "(%s) Tj\n", escape(l))
		}
		content.WriteString("ET\n")
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		_, _ = w.Write([]byte(content.String()))
		_ = w.Close()
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 3 0 R >> >> >>", 6+2*i),
			fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.String()),
		)
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R /Info 4 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `(`, `\(`, `)`, `\)`).Replace(s)
}
