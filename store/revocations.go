package store

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// RevocationChannel is the PostgreSQL NOTIFY channel on which key revocations and workspace
// suspensions (and resumptions) are announced, so that every replica ends the open streams
// of a key that may no longer work.
const RevocationChannel = "sb_revocations"

// Revocation is the payload of an announcement on RevocationChannel: a revoked key, a
// workspace whose status changed, or (WorkspaceID without WorkspaceStatus) a workspace whose
// money changed so that it may no longer work: its credit ran out or its monthly cap was
// reached by a charge, or its cap was lowered. The last kind ends no stream; it tells the
// replicas' authentication caches to read the workspace again. A key's role never changes
// (a new role is a new key), so no announcement carries one; should that change, the change
// must announce the key like a revocation.
type Revocation struct {
	KeyID           *uuid.UUID `json:"k,omitempty"`
	WorkspaceID     *uuid.UUID `json:"w,omitempty"`
	WorkspaceStatus string     `json:"s,omitempty"`
}

// announceRevocation sends r on RevocationChannel. On a transaction PostgreSQL delivers it at
// commit; on the pool the change it announces has committed already. Either way a listener
// never hears of a change that did not commit. A notice lost (a crash between the two
// statements, a listener reconnecting) is caught by the streams' periodic re-check (LiveKeys).
//
// The store's own watchers (Watch) hear it at once, before the NOTIFY comes back.
func (q *queries) announceRevocation(ctx context.Context, r Revocation) error {
	payload, _ := json.Marshal(r) // plain types: cannot fail
	q.watchers.tell(r)
	return q.sql.Announce(ctx, q.db, dbsqlc.AnnounceParams{Channel: RevocationChannel, Payloads: []string{string(payload)}})
}

// watchers are the functions Watch registered.
type watchers struct {
	mu sync.RWMutex
	fs []func(Revocation)
}

func (w *watchers) tell(r Revocation) {
	if w == nil {
		return
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	for _, f := range w.fs {
		f(r)
	}
}

// Watch makes f hear every announcement this process makes on RevocationChannel, at the
// moment it is made (a change made inside a transaction is heard before its commit; the
// NOTIFY follows at commit). Other replicas' announcements arrive through the event hub's
// LISTEN (events.Hub.OnRevocation). f must be quick and must not call the store.
func (s *Store) Watch(f func(Revocation)) {
	s.watchers.mu.Lock()
	defer s.watchers.mu.Unlock()
	s.watchers.fs = append(s.watchers.fs, f)
}

// LiveKeys returns the subset of ids that may still work: keys not revoked, of active
// workspaces.
func (q *queries) LiveKeys(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]bool, error) {
	rows, err := q.sql.LiveKeys(ctx, q.db, ids)
	if err != nil {
		return nil, err
	}
	live := make(map[uuid.UUID]bool, len(rows))
	for _, id := range rows {
		live[id] = true
	}
	return live, nil
}
