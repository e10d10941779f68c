package server

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"switchboard/store"
)

// authCache keeps the principals of recently used API keys in memory for a short time
// (Config.AuthCacheTTL, AUTH_CACHE_TTL), so that a request does not wait on a database round
// trip to learn its key, workspace and role.
//
// What may change under a cached entry, and how each change reaches it:
//
//   - a key revoked, a workspace suspended, credit used up or removed, a monthly cap reached
//     or lowered under the month's spend: the change is announced on store.RevocationChannel
//     (NOTIFY at commit). Every replica's event hub hears it on its LISTEN connection and the
//     cache drops the key, or every key of the workspace, at once; the process that made the
//     change drops them even before (store.Watch). The next request reads the database again.
//   - a key's role never changes (a new role is a new key).
//   - a workspace resumed, credit added, a cap raised or cleared: only refusals change into
//     admissions here, and a principal that would be refused is never cached, so the next
//     request reads the database and sees it.
//   - the hub's LISTEN connection lost: it forgets everything when it is back, and until then
//     an entry lives no longer than the TTL.
//
// An entry read from the database while an announcement arrived is not kept (the generation
// check), so a lookup that raced a revocation cannot outlive it.
type authCache struct {
	ttl time.Duration

	mu      sync.RWMutex
	gen     uint64 // bumped by every announcement heard
	entries map[[sha256.Size]byte]cachedPrincipal
}

type cachedPrincipal struct {
	p       store.Principal
	expires time.Time
}

// authCacheMax bounds the cache; past it, it starts again empty (keys in use come back in one
// lookup each).
const authCacheMax = 100_000

func newAuthCache(ttl time.Duration) *authCache {
	return &authCache{ttl: ttl, entries: map[[sha256.Size]byte]cachedPrincipal{}}
}

// lookup returns the principal of the key whose hash is sum: from memory when a fresh entry is
// there, else through load (the database), keeping what load returned when it may be kept.
func (c *authCache) lookup(ctx context.Context, sum []byte, load func(context.Context, []byte) (store.Principal, error)) (store.Principal, error) {
	if c == nil || c.ttl <= 0 {
		return load(ctx, sum)
	}
	var k [sha256.Size]byte
	copy(k[:], sum)
	now := time.Now()
	c.mu.RLock()
	e, ok := c.entries[k]
	gen := c.gen
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.p, nil
	}
	p, err := load(ctx, sum)
	if err != nil || !cacheable(p) {
		return p, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if len(c.entries) >= authCacheMax {
			c.entries = map[[sha256.Size]byte]cachedPrincipal{}
		}
		c.entries[k] = cachedPrincipal{p: p, expires: now.Add(c.ttl)}
	}
	c.mu.Unlock()
	return p, nil
}

// cacheable: only a principal every route would admit is kept, so that lifting a refusal
// (resume, credit, a higher cap) needs no announcement.
func cacheable(p store.Principal) bool {
	return p.WorkspaceState == store.WorkspaceActive && p.BalanceNanoUSD > 0 &&
		!store.CapReached(p.MonthlyCapNanoUSD, p.MonthSpendNanoUSD)
}

// forget applies an announcement: a key, every key of a workspace, or (the zero Revocation,
// the hub's connection restarted) everything.
func (c *authCache) forget(rv store.Revocation) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	switch {
	case rv.KeyID != nil:
		for k, e := range c.entries {
			if e.p.KeyID == *rv.KeyID {
				delete(c.entries, k)
			}
		}
	case rv.WorkspaceID != nil && rv.WorkspaceStatus == store.WorkspaceActive:
		// resumed: nothing cached can be of a suspended workspace
	case rv.WorkspaceID != nil:
		for k, e := range c.entries {
			if e.p.WorkspaceID == *rv.WorkspaceID {
				delete(c.entries, k)
			}
		}
	default:
		clear(c.entries)
	}
}
