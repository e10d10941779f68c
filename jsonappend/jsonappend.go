// Package jsonappend writes JSON values onto byte slices, byte for byte as encoding/json
// would, for the hot paths where encoding/json's reflection is measurable (the vendor
// request bodies of package llm). Its tests hold String to encoding/json's output.
package jsonappend

import (
	"math/bits"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// plain holds the ASCII bytes that stand for themselves in a JSON string as encoding/json
// writes it: one table load per byte instead of six comparisons.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// String appends s as a JSON string, as encoding/json does: control characters, quote
// and backslash escaped, <, > and & as \u escapes, invalid UTF-8 as U+FFFD, and U+2028 and
// U+2029 escaped.
func String(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			// Eight bytes at a time while they stand for themselves: the prose between two
			// escapes is most of what a vendor request carries. Otherwise on to the first byte
			// that does not (special's lowest flag is never a false one).
			m := special(load8(s, i))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// load8 is the eight bytes of s from i, the first in the low byte.
func load8(s string, i int) uint64 {
	t := s[i : i+8] // one bounds check; the compiler makes one load of the eight
	return uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
		uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
}

// special flags (in their high bits) the bytes of w that are not plain: a control character,
// '"', '\\', '<', '>', '&', or a byte of a multi-byte sequence (0x80 and up). A subtraction's
// borrow may flag a byte above a flagged one too, never below: the lowest flag is exact.
func special(w uint64) uint64 {
	return (w | (w - 0x20*ones) | zero(w^('"'*ones)) | zero(w^('\\'*ones)) |
		zero(w^('<'*ones)) | zero(w^('>'*ones)) | zero(w^('&'*ones))) & highs
}

// zero flags (in their high bits) the zero bytes of x, exactly up to the lowest.
func zero(x uint64) uint64 { return (x - ones) &^ x }
