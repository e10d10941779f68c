// Package webchat holds the rules of the public webchat routes: the visitor token that ties a
// visitor to their own conversation, and the deployment's allowed origins.
package webchat

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// Budgets of the public routes, in requests per minute: one visitor (their token, or their
// address before they have one) and one deployment (all its visitors together).
const (
	VisitorRPM    = 20
	DeploymentRPM = 300
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

// Config is what the webchat routes read of a deployment's config.
type Config struct {
	// AllowedOrigins are the origins (scheme://host[:port]) whose pages may use the widget;
	// empty means any.
	AllowedOrigins []string `json:"allowed_origins"`
}

// ParseConfig reads a deployment's config; unknown or malformed fields are ignored (the
// config is opaque to the rest of the platform), so a malformed list means any origin only
// when it is absent, never when it is present but unreadable.
func ParseConfig(raw json.RawMessage) (Config, error) {
	var c Config
	if len(raw) == 0 {
		return c, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return c, err
	}
	if v, ok := probe["allowed_origins"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &c.AllowedOrigins); err != nil {
			return c, fmt.Errorf("config.allowed_origins: %w", err)
		}
	}
	return c, nil
}

// Allows reports whether a page of origin may use the widget. An empty origin (no Origin
// header: not a cross-origin browser request) is allowed; the server's own origin always is.
func (c Config) Allows(origin, own string) bool {
	if len(c.AllowedOrigins) == 0 || origin == "" || strings.EqualFold(origin, own) {
		return true
	}
	for _, o := range c.AllowedOrigins {
		if strings.EqualFold(strings.TrimRight(strings.TrimSpace(o), "/"), origin) {
			return true
		}
	}
	return false
}
