package server

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/store"
)

func TestAuthCacheKeepsAdmittedPrincipalsUntilAnnounced(t *testing.T) {
	c := newAuthCache(time.Hour)
	ws, key := uuid.New(), uuid.New()
	p := store.Principal{KeyID: key, WorkspaceID: ws, WorkspaceState: store.WorkspaceActive, BalanceNanoUSD: 1, Role: "owner"}
	loads := 0
	load := func(context.Context, []byte) (store.Principal, error) { loads++; return p, nil }
	sum := make([]byte, 32)
	lookup := func() store.Principal {
		got, err := c.lookup(context.Background(), sum, load)
		require.NoError(t, err)
		return got
	}

	require.Equal(t, p, lookup())
	require.Equal(t, p, lookup())
	require.Equal(t, 1, loads, "the second lookup is served from memory")

	c.forget(store.Revocation{KeyID: &key})
	lookup()
	require.Equal(t, 2, loads, "a revoked key is read again")
	c.forget(store.Revocation{WorkspaceID: &ws}) // money changed
	lookup()
	require.Equal(t, 3, loads)
	c.forget(store.Revocation{WorkspaceID: &ws, WorkspaceStatus: store.WorkspaceActive}) // resumed: nothing to drop
	lookup()
	require.Equal(t, 3, loads)
	c.forget(store.Revocation{}) // the listener reconnected
	lookup()
	require.Equal(t, 4, loads)

	// A lookup that raced an announcement is not kept.
	racing := func(context.Context, []byte) (store.Principal, error) {
		loads++
		c.forget(store.Revocation{KeyID: &key})
		return p, nil
	}
	c.forget(store.Revocation{})
	_, err := c.lookup(context.Background(), sum, racing)
	require.NoError(t, err)
	lookup()
	require.Equal(t, 6, loads, "the raced result was not cached")

	// A principal that would be refused is never cached.
	p.BalanceNanoUSD = 0
	c.forget(store.Revocation{})
	lookup()
	lookup()
	require.Equal(t, 8, loads)
}
