package llm

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// FamilyConfig is how one model family reaches its vendor.
type FamilyConfig struct {
	Protocol string // anthropic, openai or gemini
	BaseURL  string // empty: the vendor's public endpoint
	APIKey   string
}

// Registry holds one Client per model family.
type Registry struct {
	clients map[string]Client
}

// NewRegistry builds one Client per family name ("alpha", "beta", "gamma"). A family without
// APIKey gets the local responder when development is true, NewUnconfigured otherwise.
// timeout bounds one whole call (Config.Timeout; 0: only the caller's context).
func NewRegistry(families map[string]FamilyConfig, development bool, httpClient *http.Client, timeout time.Duration) (*Registry, error) {
	r := &Registry{clients: make(map[string]Client, len(families))}
	for name, fc := range families {
		client, err := familyClient(name, fc, development, httpClient, timeout)
		if err != nil {
			return nil, fmt.Errorf("llm: family %s: %w", name, err)
		}
		r.clients[name] = client
	}
	return r, nil
}

func familyClient(name string, fc FamilyConfig, development bool, httpClient *http.Client, timeout time.Duration) (Client, error) {
	if fc.APIKey != "" {
		return New(Config{Protocol: fc.Protocol, BaseURL: fc.BaseURL, APIKey: fc.APIKey, HTTPClient: httpClient, Timeout: timeout})
	}
	if development {
		return NewLocal(name), nil
	}
	return NewUnconfigured(name, EnvVar(name)), nil
}

// EnvVar is the environment variable that holds a family's API key, e.g. ALPHA_API_KEY.
func EnvVar(family string) string { return strings.ToUpper(family) + "_API_KEY" }

// For returns the client of a family.
func (r *Registry) For(family string) (Client, error) {
	if c, ok := r.clients[family]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("llm: unknown model family %q (known: %s)", family, strings.Join(r.Families(), ", "))
}

// Families lists the family names, sorted.
func (r *Registry) Families() []string {
	names := make([]string, 0, len(r.clients))
	for name := range r.clients {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
