package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"switchboard/store"
)

// A revoked key, or a suspended workspace, must not keep streaming: an open events feed or a
// streamed turn was authenticated once, at its start. The hub keeps a registry of the open
// streams of this process by key and workspace; revocations and suspensions are announced
// on store.RevocationChannel (the hub's one LISTEN connection hears them) and end the
// matching streams at once, on every replica. Announcements can be lost (a listener
// reconnecting), so the hub also re-checks the keys of open streams every LiveCheck and
// whenever its listener (re)connects.

// stream is one open stream: what authenticated it and how to end it.
type stream struct {
	key, workspace uuid.UUID
	cancel         context.CancelFunc
}

// streams is the registry. recent remembers revocations heard lately, so that a stream
// registered just after its key's announcement (authenticated before, registered after)
// ends too.
type streams struct {
	mu     sync.Mutex
	open   map[*stream]struct{}
	recent map[uuid.UUID]time.Time // revoked keys and suspended workspaces, when heard
}

// recentFor is how long a heard revocation is remembered for streams registering late; the
// periodic re-check covers anything older.
const recentFor = time.Minute

func newStreams() streams {
	return streams{open: map[*stream]struct{}{}, recent: map[uuid.UUID]time.Time{}}
}

// Track registers an open stream authenticated by keyID of workspaceID: cancel is called
// when the key is revoked or the workspace suspended. Call the returned function when the
// stream ends.
func (h *Hub) Track(keyID, workspaceID uuid.UUID, cancel context.CancelFunc) (untrack func()) {
	s := &stream{key: keyID, workspace: workspaceID, cancel: cancel}
	r := &h.streams
	r.mu.Lock()
	_, keyGone := r.recent[keyID]
	_, wsGone := r.recent[workspaceID]
	r.open[s] = struct{}{}
	r.mu.Unlock()
	if keyGone || wsGone {
		cancel()
	}
	return func() {
		r.mu.Lock()
		delete(r.open, s)
		r.mu.Unlock()
	}
}

// Streams counts the open streams (for tests and metrics).
func (h *Hub) Streams() int {
	h.streams.mu.Lock()
	defer h.streams.mu.Unlock()
	return len(h.streams.open)
}

// end cancels the open streams for which match holds.
func (r *streams) end(match func(*stream) bool) {
	r.mu.Lock()
	var ending []*stream
	for s := range r.open {
		if match(s) {
			ending = append(ending, s)
		}
	}
	r.mu.Unlock()
	for _, s := range ending {
		s.cancel()
	}
}

// revoked handles an announcement on store.RevocationChannel.
func (h *Hub) revoked(payload string) {
	var rv store.Revocation
	if err := json.Unmarshal([]byte(payload), &rv); err != nil {
		h.log.Error("malformed revocation notice", slog.String("payload", payload))
		return
	}
	h.tellRevocation(rv)
	if rv.KeyID == nil && rv.WorkspaceStatus == "" {
		return // a workspace's money changed: for caches only, no stream ends
	}
	r := &h.streams
	now := time.Now()
	r.mu.Lock()
	for id, at := range r.recent {
		if now.Sub(at) > recentFor {
			delete(r.recent, id)
		}
	}
	switch {
	case rv.KeyID != nil:
		r.recent[*rv.KeyID] = now
	case rv.WorkspaceID != nil && rv.WorkspaceStatus == store.WorkspaceActive:
		delete(r.recent, *rv.WorkspaceID) // resumed: its new streams may run
	case rv.WorkspaceID != nil:
		r.recent[*rv.WorkspaceID] = now
	}
	r.mu.Unlock()
	if rv.WorkspaceID != nil && rv.WorkspaceStatus == store.WorkspaceActive {
		return
	}
	r.end(func(s *stream) bool {
		return (rv.KeyID != nil && s.key == *rv.KeyID) || (rv.WorkspaceID != nil && s.workspace == *rv.WorkspaceID)
	})
}

// checkLive ends the open streams whose key was revoked or whose workspace was suspended,
// as the database says now: the fallback for announcements that never arrived.
func (h *Hub) checkLive(ctx context.Context) {
	r := &h.streams
	r.mu.Lock()
	keys := make([]uuid.UUID, 0, len(r.open))
	for s := range r.open {
		keys = append(keys, s.key)
	}
	r.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	slices.SortFunc(keys, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	live, err := h.store.LiveKeys(ctx, slices.Compact(keys))
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("checking the keys of open streams", slog.String("error", err.Error()))
		}
		return
	}
	checked := make(map[uuid.UUID]bool, len(keys))
	for _, k := range keys {
		checked[k] = true
	}
	// A stream registered since the snapshot was not checked: it is left for the next round.
	r.end(func(s *stream) bool { return checked[s.key] && !live[s.key] })
}
