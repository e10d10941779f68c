package webchat

import (
	"encoding/json"
	"fmt"
	"strings"

	"switchboard/apierr"
	"switchboard/store"
)

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

// CheckOrigin refuses a page of origin that the deployment's config.allowed_origins does not
// name (403 origin_not_allowed). An unreadable config refuses every request: a list that is
// present but malformed never means "any".
func (s *Service) CheckOrigin(d store.WebchatDeployment, origin string) error {
	cfg, err := ParseConfig(d.Config)
	if err != nil || !cfg.Allows(origin, s.own) {
		return &apierr.Error{Kind: apierr.KindPermission, Code: "origin_not_allowed",
			Message: "This page's origin may not use this chat (the deployment's config.allowed_origins)."}
	}
	return nil
}
