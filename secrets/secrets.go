// Package secrets encrypts the secrets the server must read back (webhook signing secrets)
// before they are stored, with the server's key (SECRETS_KEY), so that a copy of the
// database alone does not give them away.
//
// The cipher is AES-256-GCM from Go's standard library (crypto/aes, crypto/cipher): an
// authenticated cipher, constant-time with AES-NI, maintained with the language and audited
// with it; a library such as tink would add a dependency for the same primitive. Each
// secret gets a random 96-bit nonce. With one key, random nonces stay safe for 2^32
// encryptions (NIST SP 800-38D), far beyond the number of webhook endpoints; rotating the key
// (`switchboard secrets rotate`) starts the count again.
//
// Each sealed secret carries the id of its key (a fingerprint, not the key), so the server
// can tell which key opens it: the current one, or the previous one during a rotation.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// version prefixes every ciphertext, so that another format can come later.
const version byte = 1

// ErrUnknownKey is returned when a secret was sealed with a key the keyring does not hold.
var ErrUnknownKey = errors.New("secrets: sealed with a key that is not configured")

// ErrTampered is returned when a sealed secret does not open with its key: it was altered,
// belongs to another record, or the key with that id is not the one that sealed it.
var ErrTampered = errors.New("secrets: the sealed secret does not open (altered, or sealed for another record)")

// Key is one AES-256 key and its id.
type Key struct {
	id   string
	aead cipher.AEAD
	raw  []byte // for Derive only
}

// ParseKey reads a key written as base64 (standard or URL alphabet, padded or not) of
// exactly 32 bytes. name is the variable it came from, for the error.
func ParseKey(name, encoded string) (Key, error) {
	encoded = strings.TrimSpace(encoded)
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err = enc.DecodeString(encoded); err == nil {
			break
		}
	}
	if err != nil || len(raw) != KeySize {
		return Key{}, fmt.Errorf("%s must be base64 of exactly %d random bytes (for example the output of `openssl rand -base64 32`)", name, KeySize)
	}
	return newKey(raw)
}

// GenerateKey returns a new random key and its base64 form.
func GenerateKey() (Key, string, error) {
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return Key{}, "", err
	}
	k, err := newKey(raw)
	return k, base64.StdEncoding.EncodeToString(raw), err
}

func newKey(raw []byte) (Key, error) {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return Key{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, err
	}
	// The id is a fingerprint: a hash of the key under a fixed label, cut to 8 bytes. It
	// identifies the key among a handful and reveals nothing usable about it.
	sum := sha256.Sum256(append([]byte("switchboard secrets key id\x00"), raw...))
	return Key{id: hex.EncodeToString(sum[:8]), aead: aead, raw: raw}, nil
}

// ID is the key's id, stored with each secret it seals.
func (k Key) ID() string { return k.id }

// Sealed is an encrypted secret and the id of the key that sealed it.
type Sealed struct {
	Ciphertext []byte // version, nonce, then the GCM ciphertext and tag
	KeyID      string
}

// Keyring seals with the current key and opens with the current or a previous one.
type Keyring struct {
	current  Key
	previous []Key
}

// NewKeyring returns a keyring sealing with current; previous keys only open.
func NewKeyring(current Key, previous ...Key) *Keyring {
	return &Keyring{current: current, previous: previous}
}

// CurrentID is the id of the key that seals.
func (r *Keyring) CurrentID() string { return r.current.id }

// PreviousIDs are the ids of the keys that only open.
func (r *Keyring) PreviousIDs() []string {
	ids := make([]string, len(r.previous))
	for i, k := range r.previous {
		ids[i] = k.id
	}
	return ids
}

// Knows reports whether the keyring holds the key with this id.
func (r *Keyring) Knows(id string) bool {
	_, ok := r.key(id)
	return ok
}

func (r *Keyring) key(id string) (Key, bool) {
	if id == r.current.id {
		return r.current, true
	}
	for _, k := range r.previous {
		if k.id == id {
			return k, true
		}
	}
	return Key{}, false
}

// Seal encrypts plaintext with the current key. binding names the record the secret belongs
// to (authenticated, not stored): a sealed secret copied into another record does not open.
func (r *Keyring) Seal(plaintext []byte, binding string) (Sealed, error) {
	k := r.current
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return Sealed{}, err
	}
	out := make([]byte, 0, 1+len(nonce)+len(plaintext)+k.aead.Overhead())
	out = append(append(out, version), nonce...)
	out = k.aead.Seal(out, nonce, plaintext, []byte(binding))
	return Sealed{Ciphertext: out, KeyID: k.id}, nil
}

// Open decrypts a sealed secret with the key of its id; binding must be the one it was
// sealed with.
func (r *Keyring) Open(s Sealed, binding string) ([]byte, error) {
	k, ok := r.key(s.KeyID)
	if !ok {
		return nil, fmt.Errorf("%w (key id %s; configured: %s)", ErrUnknownKey, s.KeyID, strings.Join(append([]string{r.current.id}, r.PreviousIDs()...), ", "))
	}
	n := k.aead.NonceSize()
	if len(s.Ciphertext) < 1+n+k.aead.Overhead() || s.Ciphertext[0] != version {
		return nil, ErrTampered
	}
	plain, err := k.aead.Open(nil, s.Ciphertext[1:1+n], s.Ciphertext[1+n:], []byte(binding))
	if err != nil {
		return nil, ErrTampered
	}
	return plain, nil
}

// Derive returns 32-byte keys for another use of the server's key (HKDF-SHA256, RFC 5869,
// with label as its info, so each use gets a key of its own and none reveals SECRETS_KEY):
// the current key's first, then the previous keys' (during a rotation, what the old key
// signed can still be checked).
func (r *Keyring) Derive(label string) ([][]byte, error) {
	out := make([][]byte, 0, 1+len(r.previous))
	for _, k := range append([]Key{r.current}, r.previous...) {
		d, err := hkdf.Key(sha256.New, k.raw, nil, label, KeySize)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
