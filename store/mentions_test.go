package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/shortid"
	"switchboard/store/storetest"
)

// TestTombstonesByMentionAreThePatternsOnes: the events a tombstone erases through the
// recorded mentions (and, after the recorded seq, by pattern) are exactly those a LIKE
// '%id%' over every event of the workspace finds: ids of conversations and of a contact,
// glued to other text, a short id of another form, events appended after the recording, an
// event of another workspace naming the same id. A second tombstone finds nothing, and the
// erased ids' mentions are gone.
func TestTombstonesByMentionAreThePatternsOnes(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	w, err := s.CreateWorkspace(ctx, "mentions", 0)
	require.NoError(t, err)
	other, err := s.CreateWorkspace(ctx, "other", 0)
	require.NoError(t, err)

	var convIDs, convShorts []string
	for i := range 6 {
		short := shortid.New(shortid.Conversation)
		if i == 5 {
			short = "mc-odd-form"
		}
		var id uuid.UUID
		require.NoError(t, s.Pool().QueryRow(ctx, `INSERT INTO conversations (workspace_id, short_id, channel) VALUES ($1, $2, 'api') RETURNING id`, w.ID, short).Scan(&id))
		convIDs, convShorts = append(convIDs, id.String()), append(convShorts, short)
	}
	var contact uuid.UUID
	require.NoError(t, s.Pool().QueryRow(ctx, `INSERT INTO contacts (workspace_id, name) VALUES ($1, 'k') RETURNING id`, w.ID).Scan(&contact))
	known := append(append(slices.Clone(convIDs), convShorts...), contact.String(), uuid.NewString() /* nobody's */)

	r := rand.New(rand.NewPCG(3, 4))
	seq := 0
	appendEvents := func(ws uuid.UUID, n int) {
		for range n {
			seq++
			var data strings.Builder
			for range 1 + r.IntN(4) {
				id := known[r.IntN(len(known))]
				switch r.IntN(3) {
				case 0:
					fmt.Fprintf(&data, `"conversation_id":%q,`, id)
				case 1:
					fmt.Fprintf(&data, `"reply_preview":"see x%sy",`, id)
				default:
					fmt.Fprintf(&data, `"part":%q,`, id[:len(id)/2])
				}
			}
			env := fmt.Sprintf(`{"id":"evt_t%d","type":"turn.completed","workspace_id":"%s","created_at":"2026-12-07T10:00:00Z","data":{%s"n":%d}}`, seq, ws, data.String(), seq)
			exec(`INSERT INTO events (workspace_id, seq, short_id, type, envelope) VALUES ($1, $2, $3, 'turn.completed', $4)`, ws, seq, fmt.Sprintf("evt_t%d", seq), env)
		}
	}
	appendEvents(w.ID, 300)
	appendEvents(other.ID, 20)
	read, err := s.IndexEventMentions(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, 300, read)
	read, err = s.IndexEventMentions(ctx, other.ID)
	require.NoError(t, err)
	require.Equal(t, 20, read)
	read, err = s.IndexEventMentions(ctx, w.ID)
	require.NoError(t, err)
	require.Zero(t, read, "a second run starts where the first stopped")
	var strangers int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM event_mentions WHERE NOT mention = ANY($1)`, known[:len(known)-1]).Scan(&strangers))
	require.Zero(t, strangers, "only the workspace's own conversations and contacts are recorded")
	appendEvents(w.ID, 50) // after the recording

	needles := []string{convIDs[0], convShorts[0], convIDs[1], convShorts[1], convIDs[5], convShorts[5], contact.String()}
	patterns := make([]string, len(needles))
	for i, n := range needles {
		patterns[i] = "%" + n + "%"
	}
	seqs := func(sql string, args ...any) []int64 {
		rows, err := s.Pool().Query(ctx, sql, args...)
		require.NoError(t, err)
		var out []int64
		for rows.Next() {
			var n int64
			require.NoError(t, rows.Scan(&n))
			out = append(out, n)
		}
		require.NoError(t, rows.Err())
		return out
	}
	want := seqs(`SELECT seq FROM events WHERE workspace_id = $1 AND envelope LIKE ANY($2) ORDER BY seq`, w.ID, patterns)
	require.Greater(t, len(want), 100, "the data mentions them often")
	require.NotEmpty(t, seqs(`SELECT seq FROM events WHERE workspace_id = $1 AND seq > 320 AND envelope LIKE ANY($2)`, w.ID, patterns))
	otherBefore := seqs(`SELECT seq FROM events WHERE workspace_id = $1 AND envelope LIKE ANY($2) ORDER BY seq`, other.ID, patterns)
	require.NotEmpty(t, otherBefore)

	n, err := s.Tombstone(ctx, w.ID, needles)
	require.NoError(t, err)
	require.Equal(t, int64(len(want)), n)
	require.Equal(t, want, seqs(`SELECT seq FROM events WHERE workspace_id = $1 AND envelope LIKE '%"data":{"erased":true}}' ORDER BY seq`, w.ID))
	require.Empty(t, seqs(`SELECT seq FROM events WHERE workspace_id = $1 AND envelope LIKE ANY($2)`, w.ID, patterns), "nothing names them")
	require.Equal(t, otherBefore, seqs(`SELECT seq FROM events WHERE workspace_id = $1 AND envelope LIKE ANY($2) ORDER BY seq`, other.ID, patterns), "another workspace's events stay")

	again, err := s.Tombstone(ctx, w.ID, needles)
	require.NoError(t, err)
	require.Zero(t, again)
	require.Empty(t, seqs(`SELECT seq FROM event_mentions WHERE workspace_id = $1 AND mention = ANY($2)`, w.ID, needles))
}
