package store

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"switchboard/gen/dbsqlc"
)

// RevocationChannel is the PostgreSQL NOTIFY channel on which key revocations and workspace
// suspensions (and resumptions) are announced, so that every replica ends the open streams
// of a key that may no longer work.
const RevocationChannel = "sb_revocations"

// Revocation is the payload of an announcement on RevocationChannel: a revoked key, or a
// workspace whose status changed.
type Revocation struct {
	KeyID           *uuid.UUID `json:"k,omitempty"`
	WorkspaceID     *uuid.UUID `json:"w,omitempty"`
	WorkspaceStatus string     `json:"s,omitempty"`
}

// announceRevocation sends r on RevocationChannel. On a transaction PostgreSQL delivers it at
// commit; on the pool the change it announces has committed already. Either way a listener
// never hears of a change that did not commit. A notice lost (a crash between the two
// statements, a listener reconnecting) is caught by the streams' periodic re-check (LiveKeys).
func (q *queries) announceRevocation(ctx context.Context, r Revocation) error {
	payload, _ := json.Marshal(r) // plain types: cannot fail
	return q.sql.Announce(ctx, q.db, dbsqlc.AnnounceParams{Channel: RevocationChannel, Payloads: []string{string(payload)}})
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
