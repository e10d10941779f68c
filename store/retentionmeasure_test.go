//go:build bulkbench

package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/internal/dbsqlc"
	"switchboard/store/storetest"
)

// sweepBeforeKeyset is the retention job's statement before it went workspace by workspace
// (kept here as the measurement's baseline): every workspace's conversations, ordered by
// their last activity, which no index serves, for each batch.
const sweepBeforeKeyset = `
SELECT c.id, c.short_id, c.workspace_id FROM conversations c
JOIN workspaces w ON w.id = c.workspace_id
LEFT JOIN agents a ON a.id = c.agent_id
WHERE coalesce((a.blueprint -> 'agent' ->> 'retention_days')::int, w.retention_days) IS NOT NULL
  AND c.updated_at < now() - make_interval(days => coalesce((a.blueprint -> 'agent' ->> 'retention_days')::int, w.retention_days))
ORDER BY c.updated_at
LIMIT $1`

// TestMeasureRetentionSweep measures a whole retention run's batches, as docs/benchmarks.md
// reports it: the statement of before (sweepBeforeKeyset) against this tree's
// (RetentionWorkspaces, then ExpiredConversations workspace by workspace from its place), on
// the same data, alternately, each run in a transaction rolled back so that both find the
// same rows. Each batch deletes what it found, as the job does. Not a unit test (no timing is
// asserted); run it with `make bench-bulk`.
//
// The data: 500,000 conversations in 200 workspaces that keep everything, and a workspace of
// 100,000 with a 30-day period, 2,000 of them expired and 5,000 more kept by an agent's
// 365-day period though older than 30 days. Then the tombstoning of the events that mention a
// batch's conversations, over 200,000 events, by pattern and by recorded mention.
func TestMeasureRetentionSweep(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	for i := range 200 {
		w, err := s.CreateWorkspace(ctx, fmt.Sprintf("keeps-%d", i), 0)
		require.NoError(t, err)
		exec(`INSERT INTO conversations (workspace_id, short_id, channel, updated_at)
		      SELECT $1, 'mc-k' || $2::int || '-' || g, 'api', now() - make_interval(days => g % 400) FROM generate_series(1, 2500) g`, w.ID, i)
	}
	w, err := s.CreateWorkspace(ctx, "thirty-days", 0)
	require.NoError(t, err)
	days := 30
	_, err = s.SetWorkspaceRetention(ctx, w.ID, &days)
	require.NoError(t, err)
	var long uuid.UUID
	require.NoError(t, s.Pool().QueryRow(ctx, `INSERT INTO agents (workspace_id, name, blueprint) VALUES ($1, 'long', '{"agent":{"retention_days":365}}') RETURNING id`, w.ID).Scan(&long))
	exec(`INSERT INTO conversations (workspace_id, short_id, channel, updated_at)
	      SELECT $1, 'mc-' || left(md5('fresh' || g), 22), 'api', now() - make_interval(secs => 10 * g) FROM generate_series(1, 93000) g`, w.ID)
	exec(`INSERT INTO conversations (workspace_id, short_id, channel, updated_at)
	      SELECT $1, 'mc-' || left(md5('old' || g), 22), 'api', now() - interval '31 days' - make_interval(mins => g) FROM generate_series(1, 2000) g`, w.ID)
	exec(`INSERT INTO conversations (workspace_id, short_id, channel, agent_id, updated_at)
	      SELECT $1, 'mc-' || left(md5('long' || g), 22), 'api', $2, now() - interval '31 days' - make_interval(mins => g) FROM generate_series(1, 5000) g`, w.ID, long)
	exec(`ANALYZE`)
	const batch = 200
	deleteFound := func(tx pgx.Tx, ws uuid.UUID, ids []uuid.UUID) {
		_, err := tx.Exec(ctx, `DELETE FROM conversations WHERE workspace_id = $1 AND id = ANY($2::uuid[])`, ws, ids)
		require.NoError(t, err)
	}

	// run sweeps once in a transaction rolled back: the time of its finding statements, of
	// the whole run, and the conversations it deleted.
	type result struct {
		finding, total time.Duration
		deleted        int
	}
	run := func(sweep func(tx pgx.Tx, found func(time.Duration)) int) result {
		tx, err := s.Pool().Begin(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, tx.Rollback(ctx)) }()
		var r result
		began := time.Now()
		r.deleted = sweep(tx, func(d time.Duration) { r.finding += d })
		r.total = time.Since(began)
		return r
	}
	before := func(tx pgx.Tx, found func(time.Duration)) int {
		deleted := 0
		for {
			began := time.Now()
			rows, err := tx.Query(ctx, sweepBeforeKeyset, batch)
			require.NoError(t, err)
			byWorkspace := map[uuid.UUID][]uuid.UUID{}
			n := 0
			for rows.Next() {
				var id, ws uuid.UUID
				var short string
				require.NoError(t, rows.Scan(&id, &short, &ws))
				byWorkspace[ws] = append(byWorkspace[ws], id)
				n++
			}
			require.NoError(t, rows.Err())
			found(time.Since(began))
			for ws, ids := range byWorkspace {
				deleteFound(tx, ws, ids)
			}
			deleted += n
			if n < batch {
				return deleted
			}
		}
	}
	q := dbsqlc.New()
	after := func(tx pgx.Tx, found func(time.Duration)) int {
		deleted := 0
		began := time.Now()
		scopes, err := q.RetentionWorkspaces(ctx, tx)
		require.NoError(t, err)
		found(time.Since(began))
		for _, sc := range scopes {
			place := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
			for {
				began := time.Now()
				rows, err := q.ExpiredConversations(ctx, tx, dbsqlc.ExpiredConversationsParams{
					WorkspaceID: sc.ID, ShortestDays: sc.ShortestDays, Before: place, WorkspaceDays: sc.RetentionDays, MaxRows: batch})
				require.NoError(t, err)
				found(time.Since(began))
				ids := make([]uuid.UUID, len(rows))
				for i, r := range rows {
					ids[i] = r.ID
				}
				deleteFound(tx, sc.ID, ids)
				deleted += len(rows)
				if len(rows) < batch {
					break
				}
				place = rows[len(rows)-1].UpdatedAt
			}
		}
		return deleted
	}
	var b, a []result
	for range 3 {
		b = append(b, run(before))
		a = append(a, run(after))
	}
	for i := range b {
		require.Equal(t, 2000, b[i].deleted)
		require.Equal(t, 2000, a[i].deleted)
		t.Logf("run %d: before: finding %s, whole run %s; after: finding %s, whole run %s; finding after / before %.4f",
			i+1, b[i].finding.Round(time.Millisecond), b[i].total.Round(time.Millisecond),
			a[i].finding.Round(time.Microsecond), a[i].total.Round(time.Millisecond), a[i].finding.Seconds()/b[i].finding.Seconds())
	}

	// What the recorded mentions change: a batch tombstones the events that mention its
	// conversations. Before, every event of the workspace was matched against two LIKE
	// patterns a conversation (TombstoneEvents); now the recorded mentions are looked up
	// (store.IndexEventMentions, then the tombstone). Over 200,000 turn.completed events of
	// about 300 bytes, each naming one of the workspace's conversations (1,000 of them naming
	// the batch's 200), in transactions rolled back.
	exec(`INSERT INTO events (workspace_id, seq, short_id, type, envelope)
	      SELECT $1::uuid, g, 'evt_m' || g, 'turn.completed',
	             '{"id":"evt_m' || g || '","type":"turn.completed","workspace_id":"' || $1::text || '","created_at":"2026-12-07T10:00:00Z","data":{"agent_id":"' || gen_random_uuid() ||
	             '","conversation_id":"' || c.short_id || '","finish_reason":"stop","model":"gpt-4o-mini","reply_preview":"We open at 10 on Sundays.","surface":"agent"}}'
	      FROM generate_series(1, 200000) g
	      JOIN (SELECT short_id, row_number() OVER (ORDER BY updated_at DESC) AS n FROM conversations WHERE workspace_id = $1) c ON c.n = 1 + g % 100000`, w.ID)
	exec(`ANALYZE events`)
	began := time.Now()
	read, err := s.IndexEventMentions(ctx, w.ID)
	require.NoError(t, err)
	recording := time.Since(began)
	require.Equal(t, 200000, read)
	t.Logf("recording the mentions of 200,000 events: %s, %.1f µs an event", recording.Round(time.Millisecond), float64(recording.Microseconds())/200000)
	var mentions, mentionBytes, eventBytes int64
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM event_mentions), pg_total_relation_size('event_mentions'), pg_total_relation_size('events')`).Scan(&mentions, &mentionBytes, &eventBytes))
	t.Logf("the mentions: %d rows, %d bytes an event with their index (the events: %d bytes an event with theirs)", mentions, mentionBytes/200000, eventBytes/200000)

	var needles, patterns []string
	rows, err := s.Pool().Query(ctx, `SELECT id::text, short_id FROM conversations WHERE workspace_id = $1 ORDER BY updated_at DESC OFFSET 93000 LIMIT $2`, w.ID, batch)
	require.NoError(t, err)
	for rows.Next() {
		var id, short string
		require.NoError(t, rows.Scan(&id, &short))
		needles, patterns = append(needles, id, short), append(patterns, "%"+id+"%", "%"+short+"%")
	}
	require.NoError(t, rows.Err())
	tombstone := func(by func(tx pgx.Tx) (int64, error)) (time.Duration, int64) {
		tx, err := s.Pool().Begin(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, tx.Rollback(ctx)) }()
		began := time.Now()
		n, err := by(tx)
		require.NoError(t, err)
		return time.Since(began), n
	}
	byPattern := func(tx pgx.Tx) (int64, error) {
		return q.TombstoneEvents(ctx, tx, dbsqlc.TombstoneEventsParams{WorkspaceID: w.ID, Patterns: patterns})
	}
	byMention := func(tx pgx.Tx) (int64, error) { return store.TombstoneOn(ctx, tx, w.ID, needles) }
	for i := range 3 {
		bt, bn := tombstone(byPattern)
		at, an := tombstone(byMention)
		require.Equal(t, bn, an, "the same events")
		require.Positive(t, an)
		t.Logf("tombstoning a batch of %d conversations over 200,000 events, run %d: by pattern %s, by mention %s (%d events each): by mention / by pattern %.5f",
			batch, i+1, bt.Round(time.Millisecond), at.Round(time.Microsecond), an, at.Seconds()/bt.Seconds())
	}
}
