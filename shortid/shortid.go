// Package shortid makes the public identifiers: a prefix and random base62 characters
// (`resp_…`, `chatcmpl-…`, `mc-…`, `whe-…`, `evt_…`). They are unique columns beside the
// UUID primary keys; 22 base62 characters carry 131 bits, so collisions are not a concern.
package shortid

import (
	"crypto/rand"
	"strings"
)

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Length is the length of the random part.
const Length = 22

// Prefixes in use.
const (
	Response     = "resp_"
	ChatCompl    = "chatcmpl-"
	Conversation = "mc-"
	Webhook      = "whe-"
	Event        = "evt_"
	Message      = "msg_"
	Action       = "act_"
)

// New returns prefix followed by random base62 characters.
func New(prefix string) string {
	out := make([]byte, 0, len(prefix)+Length)
	out = append(out, prefix...)
	var buf [32]byte
	for len(out) < cap(out) {
		_, _ = rand.Read(buf[:])
		for _, c := range buf {
			// 248 = 4*62: bytes at or above it would bias the draw, so they are skipped.
			if c < 248 && len(out) < cap(out) {
				out = append(out, alphabet[c%62])
			}
		}
	}
	return string(out)
}

// Has reports whether id starts with prefix and has a well-formed random part.
func Has(id, prefix string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) != Length {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(alphabet, rest[i]) < 0 {
			return false
		}
	}
	return true
}
