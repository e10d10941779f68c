package llm

import (
	"encoding/json"
	"sync"
)

// toolCache keeps the vendor form of tools, encoded once: the tools of a deployment or of the
// management surface are the same on every turn. Keyed by everything a Tool holds; bounded
// (past toolCacheMax entries it starts again empty). A lookup allocates nothing: the map is
// keyed by the schema's bytes (a string(bytes) index does not copy), then name and
// description are compared.
type toolCache[T any] struct {
	// encode converts a tool; false means the result must not be kept (it is used once).
	encode func(Tool) (T, bool)

	mu sync.RWMutex
	m  map[string][]toolEntry[T]
	n  int
}

type toolEntry[T any] struct {
	name, description string
	v                 T
}

const toolCacheMax = 4096

func (c *toolCache[T]) lookup(t Tool) (T, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.m[string(t.Parameters)] {
		if e.name == t.Name && e.description == t.Description {
			return e.v, true
		}
	}
	var zero T
	return zero, false
}

func (c *toolCache[T]) get(t Tool) T {
	if v, ok := c.lookup(t); ok {
		return v
	}
	v, keep := c.encode(t)
	if !keep {
		return v
	}
	c.mu.Lock()
	if c.m == nil || c.n >= toolCacheMax {
		c.m, c.n = map[string][]toolEntry[T]{}, 0
	}
	key := string(t.Parameters)
	c.m[key] = append(c.m[key], toolEntry[T]{name: t.Name, description: t.Description, v: v})
	c.n++
	c.mu.Unlock()
	return v
}

// validSchemas remembers parameter schemas already found to be valid JSON, so that
// checkRequest does not scan the same schemas on every turn.
var validSchemas = toolCache[struct{}]{encode: func(t Tool) (struct{}, bool) {
	return struct{}{}, json.Valid(t.Parameters)
}}

// validSchema reports whether a tool's parameters are valid JSON.
func validSchema(params json.RawMessage) bool {
	t := Tool{Parameters: params}
	if _, ok := validSchemas.lookup(t); ok {
		return true
	}
	if !json.Valid(params) {
		return false
	}
	validSchemas.get(t) // kept for the next turns
	return true
}
