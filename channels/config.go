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

// config is a channel's settings as the service works with them: the plain values, and the
// credentials, which are stored sealed and shown only as a hint.
type config struct {
	plain   map[string]json.RawMessage
	secrets map[string]string
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
func (s *Service) mergeConfig(w *store.ChannelWrite, patch map[string]json.RawMessage, cur *store.Channel) (*config, error) {
	cfg := &config{plain: map[string]json.RawMessage{}, secrets: map[string]string{}}
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
			delete(cfg.plain, k)
			delete(cfg.secrets, k)
			continue
		}
		if !isSecret(k) {
			cfg.plain[k] = v
			continue
		}
		var secret string
		if err := json.Unmarshal(v, &secret); err != nil || strings.TrimSpace(secret) == "" {
			return nil, apierr.Invalid(param, "invalid_value", "%s is a credential: give it as a non-empty string.", param)
		}
		cfg.secrets[k] = secret
	}
	if len(cfg.plain)+len(cfg.secrets) > maxConfigKeys {
		return nil, apierr.Invalid("config", "invalid_value", "config has too many keys: at most %d.", maxConfigKeys)
	}
	if err := s.seal(cfg, w); err != nil {
		return nil, err
	}
	return cfg, nil
}

// loadConfig reads a stored channel's config: the plain values, and its credentials opened.
func (s *Service) loadConfig(cfg *config, w *store.ChannelWrite, cur *store.Channel) error {
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
		if err := json.Unmarshal(plain, &cfg.secrets); err != nil {
			return err
		}
	}
	for k, v := range stored {
		if _, secret := cfg.secrets[k]; !secret {
			cfg.plain[k] = v // a hint in the stored config is not a value
		}
	}
	return nil
}

// seal puts the credentials, sealed, into w; none leaves w.Secrets nil.
func (s *Service) seal(cfg *config, w *store.ChannelWrite) error {
	w.Secrets = nil
	if len(cfg.secrets) == 0 {
		return nil
	}
	keys := s.store.Secrets()
	if keys == nil {
		return secretsKeyMissing()
	}
	raw, err := json.Marshal(cfg.secrets)
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
func (cfg *config) public() (json.RawMessage, error) {
	out := make(map[string]any, len(cfg.plain)+len(cfg.secrets))
	for k, v := range cfg.plain {
		out[k] = v
	}
	for k, v := range cfg.secrets {
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

// str reads a plain string setting; ok is false when it is absent.
func (cfg *config) str(key string) (string, bool, error) {
	raw, ok := cfg.plain[key]
	if !ok {
		return "", false, nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", true, apierr.Invalid("config."+key, "invalid_value", "config.%s must be a string.", key)
	}
	return v, true, nil
}

func (cfg *config) set(key, value string) {
	raw, _ := json.Marshal(value)
	cfg.plain[key] = raw
}
