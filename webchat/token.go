package webchat

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"switchboard/store"
)

// KeyLabel is the HKDF label under which the visitor tokens' key is derived from SECRETS_KEY
// (secrets.Keyring.Derive): every replica, and the process after a restart, derives the same.
const KeyLabel = "switchboard webchat visitor tokens v1"

// Tokens issues and checks visitor tokens. A token names one conversation of one deployment
// and is signed (HMAC-SHA256) with the key, so a visitor can continue only the conversation
// the server gave them; nothing is stored.
type Tokens struct{ keys [][]byte }

// NewTokens signs with the first key and accepts a token signed with any of them (the keys
// derived from SECRETS_KEY, then from SECRETS_KEY_PREVIOUS during a rotation). Without a key
// it draws a random one: tokens then last as long as the process (development without
// SECRETS_KEY, tests).
func NewTokens(keys ...[]byte) *Tokens {
	var ks [][]byte
	for _, k := range keys {
		if len(k) > 0 {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			panic(fmt.Sprintf("webchat: random key: %v", err))
		}
		ks = [][]byte{k}
	}
	return &Tokens{keys: ks}
}

// Issue returns the token of a conversation of a deployment.
func (t *Tokens) Issue(deployment uuid.UUID, conversation string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(conversation)) + "." + sign(t.keys[0], deployment, conversation)
}

// Conversation returns the conversation a token names, when it was issued for the deployment.
func (t *Tokens) Conversation(deployment uuid.UUID, token string) (string, bool) {
	conv, sig, ok := strings.Cut(token, ".")
	if !ok {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(conv)
	if err != nil || len(raw) == 0 || len(raw) > 64 {
		return "", false
	}
	for _, k := range t.keys {
		if hmac.Equal([]byte(sig), []byte(sign(k, deployment, string(raw)))) {
			return string(raw), true
		}
	}
	return "", false
}

func sign(key []byte, deployment uuid.UUID, conversation string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("webchat-visitor\x00" + deployment.String() + "\x00" + conversation))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// KeyedTokens signs with key when set, else with a key derived from the store's SECRETS_KEY
// keyring (HKDF, label KeyLabel; SECRETS_KEY_PREVIOUS's still checks during a rotation), so
// that a token outlives a restart and works on every replica. Without a keyring (production
// with no SECRETS_KEY) the key is random per process: a visitor then starts a new
// conversation after a restart.
func KeyedTokens(key []byte, st *store.Store) (*Tokens, error) {
	if len(key) > 0 {
		return NewTokens(key), nil
	}
	if st == nil || st.Secrets() == nil {
		return NewTokens(), nil
	}
	keys, err := st.Secrets().Derive(KeyLabel)
	if err != nil {
		return nil, err
	}
	return NewTokens(keys...), nil
}
