// Package catalog is the model table: the allowlisted model ids, the vendor family that runs
// each one, its upstream name and its price. The table is data with defaults; MODELS_FILE
// overrides the upstream name and prices of listed ids (it cannot add ids: the allowlist is
// part of the public contract).
package catalog

import (
	"fmt"
	"math"
	"os"
	"sort"

	"gopkg.in/yaml.v3"
)

// DefaultModel runs when a request names no model.
const DefaultModel = "alpha-sonnet-4-6"

// Family is a vendor family: alpha, beta or gamma. Each is configured with its own key,
// base URL and wire protocol.
type Family string

// The vendor families; a model id starts with its family's name.
const (
	Alpha Family = "alpha"
	Beta  Family = "beta"
	Gamma Family = "gamma"
)

// Families lists the vendor families in a stable order.
var Families = []Family{Alpha, Beta, Gamma}

// Model is one row of the table. Prices are USD per million tokens.
type Model struct {
	ID            string  `yaml:"-"`
	Family        Family  `yaml:"-"`
	Upstream      string  `yaml:"upstream"`
	InputPerMTok  float64 `yaml:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok"`
	// ContextTokens is the model's context window in tokens: it bounds how much of a stored
	// conversation a turn sends (agent.HistoryWindow).
	ContextTokens int   `yaml:"context_tokens"`
	Created       int64 `yaml:"-"` // unix seconds the model entered the catalog
}

// CostNanoUSD is the price of a call in billionths of a dollar, rounded up so that a
// non-zero call is never free.
func (m Model) CostNanoUSD(inputTokens, outputTokens int64) int64 {
	nano := float64(inputTokens)*m.InputPerMTok*1e3 + float64(outputTokens)*m.OutputPerMTok*1e3
	return int64(math.Ceil(nano - 1e-9))
}

// Catalog is an immutable model table.
type Catalog struct {
	byID  map[string]Model
	order []string
}

// catalogDate is when the allowlist was published, reported as each model's `created`.
const catalogDate = 1767225600 // 2026-01-01T00:00:00Z

func defaults() []Model {
	return []Model{
		{ID: "alpha-sonnet-4-6", Family: Alpha, InputPerMTok: 3, OutputPerMTok: 15, ContextTokens: 200_000},
		{ID: "alpha-haiku-4-5", Family: Alpha, InputPerMTok: 1, OutputPerMTok: 5, ContextTokens: 200_000},
		{ID: "alpha-opus-4-7", Family: Alpha, InputPerMTok: 5, OutputPerMTok: 25, ContextTokens: 200_000},
		{ID: "beta-5.4", Family: Beta, InputPerMTok: 1.25, OutputPerMTok: 10, ContextTokens: 400_000},
		{ID: "beta-5.4-mini", Family: Beta, InputPerMTok: 0.25, OutputPerMTok: 2, ContextTokens: 400_000},
		{ID: "gamma-v4-flash", Family: Gamma, InputPerMTok: 0.3, OutputPerMTok: 2.5, ContextTokens: 1_048_576},
		{ID: "gamma-v4-pro", Family: Gamma, InputPerMTok: 1.25, OutputPerMTok: 10, ContextTokens: 1_048_576},
	}
}

// Default returns the built-in table. Upstream names default to the model id.
func Default() *Catalog {
	c := &Catalog{byID: map[string]Model{}}
	for _, m := range defaults() {
		m.Upstream = m.ID
		m.Created = catalogDate
		c.byID[m.ID] = m
		c.order = append(c.order, m.ID)
	}
	return c
}

// Load returns the default table with the overrides of the YAML file at path applied. The file
// maps model ids to any of `upstream`, `input_per_mtok`, `output_per_mtok`, `context_tokens`:
//
//	alpha-sonnet-4-6:
//	  upstream: claude-sonnet-4-6
//	  input_per_mtok: 3
//	  output_per_mtok: 15
func Load(path string) (*Catalog, error) {
	c := Default()
	if path == "" {
		return c, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("MODELS_FILE: %w", err)
	}
	var overrides map[string]yaml.Node
	if err := yaml.Unmarshal(raw, &overrides); err != nil {
		return nil, fmt.Errorf("MODELS_FILE %s: %w", path, err)
	}
	ids := make([]string, 0, len(overrides))
	for id := range overrides {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m, ok := c.byID[id]
		if !ok {
			return nil, fmt.Errorf("MODELS_FILE %s: %q is not an allowlisted model id", path, id)
		}
		node := overrides[id]
		if err := node.Decode(&m); err != nil {
			return nil, fmt.Errorf("MODELS_FILE %s: %s: %w", path, id, err)
		}
		if m.Upstream == "" || m.InputPerMTok < 0 || m.OutputPerMTok < 0 || m.ContextTokens <= 0 {
			return nil, fmt.Errorf("MODELS_FILE %s: %s: upstream must be set, prices must not be negative and context_tokens must be positive", path, id)
		}
		c.byID[id] = m
	}
	return c, nil
}

// Lookup returns the model with the given id.
func (c *Catalog) Lookup(id string) (Model, bool) {
	m, ok := c.byID[id]
	return m, ok
}

// All returns the models in catalog order.
func (c *Catalog) All() []Model {
	out := make([]Model, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, c.byID[id])
	}
	return out
}

// IDs returns the model ids in catalog order.
func (c *Catalog) IDs() []string { return append([]string(nil), c.order...) }

// VoiceNanoUSDPerMinute is the price of a phone call on a telco_voice channel, inbound or
// outbound, per started minute (package voice): 2 US cents, carrier and speech included.
const VoiceNanoUSDPerMinute = 20_000_000
