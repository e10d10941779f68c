package store_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/store"
)

// TestTurnRowsHaveTimeOrderedKeys: the conversations, responses and ledger rows of turns
// get UUIDv7 primary keys (newRowID), so a later batch's keys sort after an earlier one's
// and land at the right edge of the B-trees, whichever path wrote them (the group commit's
// batch statements or the one-row inserts).
func TestTurnRowsHaveTimeOrderedKeys(t *testing.T) {
	ctx := context.Background()
	s, w := pipeWorkspace(t, 1000)
	batch := func(tag string) {
		turns := newTurns(w.ID, tag)
		_, err := s.Pipelined(ctx, func(tx *store.Tx) error {
			if err := tx.WriteTurns(ctx, turns); err != nil {
				return err
			}
			workspaces, records := recordsOf(turns)
			if err := tx.InsertTurnRecords(ctx, workspaces, records); err != nil {
				return err
			}
			return tx.SettleMany(ctx, w.ID, []store.Settlement{spend(10), spend(10)})
		})
		require.NoError(t, err)
	}
	start := time.Now()
	batch("one")
	time.Sleep(2 * time.Millisecond) // the next millisecond: v7 orders by time, then at random
	require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
		c, err := tx.CreateConversation(ctx, w.ID, "api")
		if err != nil {
			return err
		}
		return tx.InsertResponse(ctx, w.ID, store.StoredResponse{ShortID: "resp_single", ConversationID: &c.ID,
			Status: "queued", Model: "m", Body: []byte("{}")})
	}))
	time.Sleep(2 * time.Millisecond)
	batch("two")

	for _, table := range []string{"conversations", "responses", "ledger"} {
		rows, err := s.Pool().Query(ctx, `SELECT id, created_at FROM `+table+` WHERE workspace_id = $1 ORDER BY created_at`, w.ID)
		require.NoError(t, err)
		type row struct {
			id uuid.UUID
			at time.Time
		}
		var got []row
		for rows.Next() {
			var r row
			require.NoError(t, rows.Scan(&r.id, &r.at))
			got = append(got, r)
		}
		require.NoError(t, rows.Err())
		require.GreaterOrEqual(t, len(got), 4, table)
		for i, r := range got {
			require.Equal(t, uuid.Version(7), r.id.Version(), "%s row %d", table, i)
			sec, nsec := r.id.Time().UnixTime()
			require.WithinDuration(t, start, time.Unix(sec, nsec), time.Minute, "%s row %d carries its creation time", table, i)
			for _, earlier := range got[:i] {
				if earlier.at.Before(r.at) { // an earlier transaction's row sorts first
					require.Negative(t, bytes.Compare(earlier.id[:], r.id[:]), "%s: %s after %s", table, r.id, earlier.id)
				}
			}
		}
	}
}
