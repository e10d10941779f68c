package llm

import "sync"

// toolCache keeps the vendor form of tools, encoded once: the tools of a deployment or of the
// management surface are the same on every turn. Keyed by everything a Tool holds; bounded
// (past toolCacheMax entries it starts again empty).
type toolCache[T any] struct {
	// encode converts a tool; false means the result must not be kept (it is used once).
	encode func(Tool) (T, bool)

	mu sync.RWMutex
	m  map[string]T
}

const toolCacheMax = 4096

func (c *toolCache[T]) get(t Tool) T {
	key := t.Name + "\x00" + t.Description + "\x00" + string(t.Parameters)
	c.mu.RLock()
	v, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v, keep := c.encode(t)
	if !keep {
		return v
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= toolCacheMax {
		c.m = map[string]T{}
	}
	c.m[key] = v
	c.mu.Unlock()
	return v
}
