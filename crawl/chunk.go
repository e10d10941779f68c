package crawl

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// defaultChunkChars is the chunk size Chunks uses when given maxChars <= 0.
const defaultChunkChars = 1000

// Chunks splits a page's text into chunks of about maxChars characters on paragraph/sentence
// boundaries, for full-text indexing. Characters are runes; no chunk is longer than maxChars
// (maxChars <= 0 means 1000). Paragraphs (separated by blank lines) are packed
// together while they fit; a longer paragraph is split between sentences, a longer sentence
// between words, and a longer word anywhere. Empty or blank text gives no chunks.
func Chunks(text string, maxChars int) []string {
	if maxChars <= 0 {
		maxChars = defaultChunkChars
	}
	var pieces []piece
	for _, para := range paragraphs(text) {
		pieces = appendPieces(pieces, para, "\n\n", maxChars)
	}
	return pack(pieces, maxChars)
}

// piece is a unit of text and the separator that goes before it when it shares a chunk with
// the previous piece.
type piece struct {
	text string
	sep  string
}

// appendPieces appends para as one piece if it fits, else as sentences, else as words, else
// as runs of maxChars runes.
func appendPieces(pieces []piece, para, sep string, maxChars int) []piece {
	if utf8.RuneCountInString(para) <= maxChars {
		return append(pieces, piece{para, sep})
	}
	for i, s := range sentences(para) {
		if i > 0 {
			sep = " "
		}
		if utf8.RuneCountInString(s) <= maxChars {
			pieces = append(pieces, piece{s, sep})
			continue
		}
		for j, w := range strings.Fields(s) {
			if j > 0 {
				sep = " "
			}
			for utf8.RuneCountInString(w) > maxChars {
				end := 0
				for range maxChars {
					_, size := utf8.DecodeRuneInString(w[end:])
					end += size
				}
				pieces = append(pieces, piece{w[:end], sep})
				w, sep = w[end:], ""
			}
			pieces = append(pieces, piece{w, sep})
		}
	}
	return pieces
}

// pack joins consecutive pieces while the result stays within maxChars runes.
func pack(pieces []piece, maxChars int) []string {
	var out []string
	var cur strings.Builder
	n := 0
	for _, p := range pieces {
		pn := utf8.RuneCountInString(p.text)
		if n > 0 && n+utf8.RuneCountInString(p.sep)+pn <= maxChars {
			cur.WriteString(p.sep)
			cur.WriteString(p.text)
			n += utf8.RuneCountInString(p.sep) + pn
			continue
		}
		if n > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
		cur.WriteString(p.text)
		n = pn
	}
	if n > 0 {
		out = append(out, cur.String())
	}
	return out
}

// paragraphs splits text at blank lines, trimming each paragraph and dropping empty ones.
func paragraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	var cur []string
	flush := func() {
		if p := strings.TrimSpace(strings.Join(cur, "\n")); p != "" {
			out = append(out, p)
		}
		cur = cur[:0]
	}
	for line := range strings.SplitSeq(text, "\n") {
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// sentences splits a paragraph after sentence-ending punctuation (. ! ? and their CJK forms,
// with any closing quotes or brackets) followed by whitespace or the end; CJK full stops need
// no space after them.
func sentences(p string) []string {
	var out []string
	start := 0
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		i += size
		cjk := r == '。' || r == '！' || r == '？'
		if r != '.' && r != '!' && r != '?' && !cjk {
			continue
		}
		for i < len(p) {
			c, n := utf8.DecodeRuneInString(p[i:])
			if !strings.ContainsRune(".!?。！？)]}\"'”’»」』", c) {
				break
			}
			i += n
		}
		next, _ := utf8.DecodeRuneInString(p[i:])
		if i == len(p) || unicode.IsSpace(next) || cjk {
			if s := strings.TrimSpace(p[start:i]); s != "" {
				out = append(out, s)
			}
			start = i
		}
	}
	if s := strings.TrimSpace(p[start:]); s != "" {
		out = append(out, s)
	}
	return out
}
