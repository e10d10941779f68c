// Package apikey makes and recognizes workspace API keys: `sk-svc_` followed by the unpadded
// base64url encoding of 32 random bytes. Only the SHA-256 of a key is ever stored.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// Prefix starts every key.
const Prefix = "sk-svc_"

const secretBytes = 32

// Roles a key can carry, from the most to the least powerful.
var Roles = []string{"owner", "admin", "member", "viewer"}

// ValidRole reports whether role is one of Roles.
func ValidRole(role string) bool {
	for _, r := range Roles {
		if r == role {
			return true
		}
	}
	return false
}

// ErrMalformed is returned by Hash for a string that cannot be a key.
var ErrMalformed = errors.New("malformed API key")

// New returns a new key, its SHA-256 and the prefix shown in key lists.
func New() (key string, sum []byte, display string) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on supported platforms
	}
	key = Prefix + base64.RawURLEncoding.EncodeToString(b)
	sum, _ = Hash(key)
	return key, sum, Display(key)
}

// Hash checks the shape of key and returns its SHA-256. Malformed keys are refused before any
// database lookup. Keys given by operators (BOOTSTRAP_API_KEY) only need the prefix and at
// least 32 characters after it.
func Hash(key string) ([]byte, error) {
	rest, ok := strings.CutPrefix(key, Prefix)
	if !ok || len(rest) < 32 || len(rest) > 256 {
		return nil, ErrMalformed
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return nil, ErrMalformed
		}
	}
	s := sha256.Sum256([]byte(key))
	return s[:], nil
}

// Display is the part of a key shown in lists: the prefix and four characters.
func Display(key string) string {
	if len(key) < len(Prefix)+4 {
		return key
	}
	return key[:len(Prefix)+4] + "…"
}
