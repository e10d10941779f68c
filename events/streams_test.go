package events

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/store"
)

// ended is a stream's cancel function that records that it was called.
func ended() (func(), func() bool) {
	done := false
	return func() { done = true }, func() bool { return done }
}

// TestRevocationsEndTheMatchingStreams: an announcement ends the streams of its key or
// workspace, and no other.
func TestRevocationsEndTheMatchingStreams(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, discardLog())
	key, other, ws, otherWS := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	cancelKey, keyEnded := ended()
	cancelOther, otherEnded := ended()
	cancelWS, wsEnded := ended()
	untrack := h.Track(key, ws, cancelKey)
	defer untrack()
	h.Track(other, otherWS, cancelOther)
	h.Track(uuid.New(), ws, cancelWS)

	h.revoked(`{"k":"` + key.String() + `"}`)
	require.True(t, keyEnded())
	require.False(t, otherEnded())
	require.False(t, wsEnded())

	h.revoked(`{"w":"` + ws.String() + `","s":"active"}`)
	require.False(t, wsEnded(), "a resumption ends nothing")
	h.revoked(`{"w":"` + ws.String() + `","s":"suspended"}`)
	require.True(t, wsEnded())
	require.False(t, otherEnded())
	h.revoked(`not json`)
	require.Equal(t, 3, h.Streams())
}

// TestAStreamRegisteredAfterItsRevocationEndsAtOnce: a stream authenticated just before its
// key was revoked, and registered just after the announcement, ends as it registers; once
// the workspace is resumed, its new streams run.
func TestAStreamRegisteredAfterItsRevocationEndsAtOnce(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, discardLog())
	key, ws := uuid.New(), uuid.New()
	h.revoked(`{"k":"` + key.String() + `"}`)
	cancel, isEnded := ended()
	h.Track(key, uuid.New(), cancel)
	require.True(t, isEnded())

	h.revoked(`{"w":"` + ws.String() + `","s":"suspended"}`)
	cancel, isEnded = ended()
	h.Track(uuid.New(), ws, cancel)
	require.True(t, isEnded())
	h.revoked(`{"w":"` + ws.String() + `","s":"active"}`)
	cancel, isEnded = ended()
	h.Track(uuid.New(), ws, cancel)
	require.False(t, isEnded())
}

// TestKeyWaitersAreToldOfTheirKeyOnly: an idempotency announcement wakes the waiters of its
// key; a reconnection (token "") wakes them all.
func TestKeyWaitersAreToldOfTheirKeyOnly(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, discardLog())
	ws := uuid.New()
	mine, stop := h.WaitKey(ws, "order-1")
	theirs, stopTheirs := h.WaitKey(ws, "order-2")
	require.Equal(t, 2, h.KeyWaiters())

	h.keyChanged(storeToken(ws, "order-1"))
	requireSignalled(t, mine)
	requireQuiet(t, theirs)
	h.keyChanged("")
	requireSignalled(t, mine)
	requireSignalled(t, theirs)
	stop()
	stopTheirs()
	require.Zero(t, h.KeyWaiters())
}

func requireSignalled(t *testing.T, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	default:
		t.Fatal("not signalled")
	}
}

func requireQuiet(t *testing.T, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
		t.Fatal("signalled for another key")
	default:
	}
}

func storeToken(ws uuid.UUID, key string) string { return store.IdempotencyToken(ws, key) }
