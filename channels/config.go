package channels

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"switchboard/apierr"
	"switchboard/store"
)

// Config is a channel's settings as the service and its providers work with them: the plain
// values, and the credentials (opened), which are stored sealed and shown only as a hint.
type Config struct {
	Plain   map[string]json.RawMessage
	Secrets map[string]string
}

// secretNames are config keys that hold credentials whatever the provider; so does any key
// ending in one of secretSuffixes.
var (
	secretNames    = []string{"token", "secret", "password", "api_key", "auth_token", "access_token", "app_secret", "verify_token", "bot_token"}
	secretSuffixes = []string{"_token", "_secret", "_key", "_password"}
)

// isSecret says whether a config key holds a credential.
func isSecret(key string) bool {
	k := strings.ToLower(key)
	if slices.Contains(secretNames, k) {
		return true
	}
	for _, suffix := range secretSuffixes {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

// Limits of a channel's config.
const (
	maxConfigKeys  = 50
	maxConfigValue = 4096 // bytes of one value's JSON
)

// secretsBinding ties sealed credentials to their channel: copied into another row, they do
// not open.
func secretsBinding(c *store.ChannelWrite) string { return store.ChannelSecretsBinding(c.ID) }

// mergeConfig is the stored config (on an update) with the given keys applied: a value
// replaces, null removes; credentials are sealed into w.Secrets.
func (s *Service) mergeConfig(w *store.ChannelWrite, patch map[string]json.RawMessage, cur *store.Channel) (*Config, error) {
	cfg := newConfig()
	if cur != nil {
		if err := s.loadConfig(cfg, w, cur); err != nil {
			return nil, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(patch)) {
		v := patch[k]
		param := "config." + k
		if k == "" || utf8.RuneCountInString(k) > 64 {
			return nil, apierr.Invalid("config", "invalid_value", "config keys must be 1 to 64 characters.")
		}
		if len(v) > maxConfigValue {
			return nil, apierr.Invalid(param, "invalid_value", "%s is too long: at most %d bytes of JSON.", param, maxConfigValue)
		}
		if string(bytes.TrimSpace(v)) == "null" {
			delete(cfg.Plain, k)
			delete(cfg.Secrets, k)
			continue
		}
		if !isSecret(k) {
			cfg.Plain[k] = v
			continue
		}
		var secret string
		if err := json.Unmarshal(v, &secret); err != nil || strings.TrimSpace(secret) == "" {
			return nil, apierr.Invalid(param, "invalid_value", "%s is a credential: give it as a non-empty string.", param)
		}
		cfg.Secrets[k] = secret
	}
	if len(cfg.Plain)+len(cfg.Secrets) > maxConfigKeys {
		return nil, apierr.Invalid("config", "invalid_value", "config has too many keys: at most %d.", maxConfigKeys)
	}
	if err := s.seal(cfg, w); err != nil {
		return nil, err
	}
	return cfg, nil
}

// loadConfig reads a stored channel's config: the plain values, and its credentials opened.
func (s *Service) loadConfig(cfg *Config, w *store.ChannelWrite, cur *store.Channel) error {
	stored := map[string]json.RawMessage{}
	if len(cur.Config) > 0 {
		if err := json.Unmarshal(cur.Config, &stored); err != nil {
			return err
		}
	}
	if cur.Secrets != nil {
		keys := s.store.Secrets()
		if keys == nil {
			return secretsKeyMissing()
		}
		plain, err := keys.Open(*cur.Secrets, secretsBinding(w))
		if err != nil {
			return err
		}
		if err := json.Unmarshal(plain, &cfg.Secrets); err != nil {
			return err
		}
	}
	for k, v := range stored {
		if _, secret := cfg.Secrets[k]; !secret {
			cfg.Plain[k] = v // a hint in the stored config is not a value
		}
	}
	return nil
}

// seal puts the credentials, sealed, into w; none leaves w.Secrets nil.
func (s *Service) seal(cfg *Config, w *store.ChannelWrite) error {
	w.Secrets = nil
	if len(cfg.Secrets) == 0 {
		return nil
	}
	keys := s.store.Secrets()
	if keys == nil {
		return secretsKeyMissing()
	}
	raw, err := json.Marshal(cfg.Secrets)
	if err != nil {
		return err
	}
	sealed, err := keys.Seal(raw, secretsBinding(w))
	if err != nil {
		return err
	}
	w.Secrets = &sealed
	return nil
}

func secretsKeyMissing() *apierr.Error {
	e := apierr.Invalid("config", "secrets_key_missing", "This server cannot store credentials: SECRETS_KEY is not set.")
	e.Hint = "Set SECRETS_KEY (base64 of 32 random bytes: `openssl rand -base64 32`) and restart."
	return e
}

// public is the config as it is stored and shown: plain values, and a hint for each
// credential ("…" and its last 4 characters, when it is long enough to spare them).
func (cfg *Config) public() (json.RawMessage, error) {
	out := make(map[string]any, len(cfg.Plain)+len(cfg.Secrets))
	for k, v := range cfg.Plain {
		out[k] = v
	}
	for k, v := range cfg.Secrets {
		out[k] = hint(v)
	}
	return json.Marshal(out)
}

func hint(secret string) string {
	r := []rune(secret)
	if len(r) < 12 {
		return "…"
	}
	return "…" + string(r[len(r)-4:])
}

func newConfig() *Config {
	return &Config{Plain: map[string]json.RawMessage{}, Secrets: map[string]string{}}
}

// Str reads a plain string setting; ok is false when it is absent, and a value that is not a
// string is a 400 naming config.<key>.
func (cfg *Config) Str(key string) (string, bool, error) {
	raw, ok := cfg.Plain[key]
	if !ok {
		return "", false, nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", true, apierr.Invalid("config."+key, "invalid_value", "config.%s must be a string.", key)
	}
	return v, true, nil
}

// Set sets a plain string setting.
func (cfg *Config) Set(key, value string) {
	raw, _ := json.Marshal(value)
	cfg.Plain[key] = raw
}
