package erasure_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard/erasure"
	"switchboard/shortid"
	"switchboard/store"
	"switchboard/store/storetest"
)

// TestSweepAppliesEachAgentsPeriod: the retention job deletes exactly the conversations past
// the period that applies to each (its agent's where the blueprint sets one, else its
// workspace's), in every workspace that has one, in batches smaller than what there is to
// delete: conversations kept by an agent's longer period among the expired ones, and several
// last active at the same instant across a batch's edge, are neither skipped nor deleted. The
// events naming the deleted conversations are tombstoned through the mentions the run
// records first, and only those.
func TestSweepAppliesEachAgentsPeriod(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	workspace := func(name string, days *int) uuid.UUID {
		w, err := st.CreateWorkspace(ctx, name, 0)
		require.NoError(t, err)
		if days != nil {
			_, err = st.SetWorkspaceRetention(ctx, w.ID, days)
			require.NoError(t, err)
		}
		return w.ID
	}
	agent := func(ws uuid.UUID, blueprint string) *uuid.UUID {
		var id uuid.UUID
		require.NoError(t, st.Pool().QueryRow(ctx, `INSERT INTO agents (workspace_id, name, blueprint) VALUES ($1, 'a', $2) RETURNING id`, ws, blueprint).Scan(&id))
		return &id
	}
	var expired, kept []string
	// conversations adds count conversations last active daysAgo days ago (the same
	// instant for all of them), to expired or kept.
	conversations := func(ws uuid.UUID, agent *uuid.UUID, daysAgo, count int, expires bool) {
		for range count {
			short := shortid.New(shortid.Conversation) // of the usual form, so its events' mentions are recorded
			_, err := st.Pool().Exec(ctx, `INSERT INTO conversations (workspace_id, short_id, channel, agent_id, updated_at)
				VALUES ($1, $2, 'api', $3, date_trunc('day', now()) - make_interval(days => $4))`, ws, short, agent, daysAgo)
			require.NoError(t, err)
			// An event names it, as turn.completed does.
			_, err = st.Pool().Exec(ctx, `WITH s AS (UPDATE workspaces SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq)
				INSERT INTO events (workspace_id, seq, short_id, type, envelope)
				SELECT $1, s.event_seq, 'evt_' || $2, 'turn.completed', '{"id":"evt_' || $2 || '","type":"turn.completed","data":{"conversation_id":"' || $2 || '"}}' FROM s`, ws, short)
			require.NoError(t, err)
			if expires {
				expired = append(expired, short)
			} else {
				kept = append(kept, short)
			}
		}
	}
	thirty := 30

	a := workspace("thirty-days", &thirty)
	long, short, plain := agent(a, `{"agent":{"retention_days":365}}`), agent(a, `{"agent":{"retention_days":7}}`), agent(a, `{}`)
	conversations(a, nil, 50, 5, true) // five at one instant, across batches of two
	conversations(a, nil, 10, 1, false)
	conversations(a, plain, 40, 1, true)
	conversations(a, long, 40, 3, false) // among the expired, passed over
	conversations(a, long, 60, 2, false)
	conversations(a, long, 400, 1, true)
	conversations(a, short, 10, 2, true)
	conversations(a, short, 3, 1, false)

	b := workspace("an-agents-week", nil)
	weekly := agent(b, `{"agent":{"retention_days":7}}`)
	conversations(b, weekly, 10, 3, true)
	conversations(b, weekly, 2, 1, false)
	conversations(b, nil, 100, 1, false)

	c := workspace("keeps-everything", nil)
	conversations(c, agent(c, `{}`), 1000, 2, false)

	swept, err := erasure.Sweep(ctx, st, 2)
	require.NoError(t, err)
	require.Equal(t, len(expired), swept.Conversations)
	// sorted is the sorted strings sql returns.
	sorted := func(sql string) []string {
		rows, err := st.Pool().Query(ctx, sql)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		slices.Sort(out)
		return out
	}
	slices.Sort(kept)
	require.Equal(t, kept, sorted(`SELECT short_id FROM conversations`), "what the periods keep, and only that")

	require.Equal(t, len(expired), swept.Events, "each expired conversation's event is tombstoned")
	require.Positive(t, swept.EventsIndexed)
	require.Equal(t, kept, sorted(`SELECT substring(envelope from '"conversation_id":"([^"]+)"') FROM events WHERE envelope NOT LIKE '%"erased":true%'`),
		"the events of the kept conversations keep their data")

	again, err := erasure.Sweep(ctx, st, 2)
	require.NoError(t, err)
	require.Zero(t, again.Conversations, "a second run finds nothing")

	scopes, err := st.RetentionScopes(ctx)
	require.NoError(t, err)
	got := map[uuid.UUID]store.RetentionScope{}
	for _, s := range scopes {
		got[s.Workspace] = *s
	}
	require.Len(t, got, 2, "the workspace without any period is not read")
	require.Equal(t, 7, got[a].Shortest)
	require.Equal(t, 30, *got[a].Days)
	require.Equal(t, 7, got[b].Shortest)
	require.Nil(t, got[b].Days)
}

// TestSweepLeavesAConversationInUseAlone: a conversation past its period that a turn is
// writing to (the turn's transaction holds it, as the group commit's append does: its
// activity moved, a message written, not yet committed) is skipped, not waited for and not
// deleted; the other expired conversation goes. Once the turn commits, the conversation is
// active, and keeps its messages and its event's data. (A real turn also holds its
// workspace's row while it settles, a few milliseconds before COMMIT, and the batch waits for
// that row before it commits: TestSweepTombstonesAnEventAppendedDuringItsBatch. The turn here
// holds its conversation only, so that a run that waits for it shows.) Without the batch's
// lock the run's DELETE waits for the turn and then deletes the conversation it just wrote
// to (checked: with the turn committing while the run waits, both conversations went);
// with the lock but without SKIP LOCKED the run waits: either way the run does not end while
// the turn is open, and the test fails at its deadline.
func TestSweepLeavesAConversationInUseAlone(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	w, err := st.CreateWorkspace(ctx, "thirty-days", 0)
	require.NoError(t, err)
	thirty := 30
	_, err = st.SetWorkspaceRetention(ctx, w.ID, &thirty)
	require.NoError(t, err)
	event := `WITH s AS (UPDATE workspaces SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq)
		INSERT INTO events (workspace_id, seq, short_id, type, envelope)
		SELECT $1, s.event_seq, 'evt_' || $2 || s.event_seq, 'turn.completed', '{"type":"turn.completed","data":{"conversation_id":"' || $2 || '"}}' FROM s`
	// idle adds a conversation last active 40 days ago, with an event naming it.
	idle := func() (uuid.UUID, string) {
		short := shortid.New(shortid.Conversation)
		var id uuid.UUID
		require.NoError(t, st.Pool().QueryRow(ctx, `INSERT INTO conversations (workspace_id, short_id, channel, updated_at)
			VALUES ($1, $2, 'api', now() - interval '40 days') RETURNING id`, w.ID, short).Scan(&id))
		_, err := st.Pool().Exec(ctx, event, w.ID, short)
		require.NoError(t, err)
		return id, short
	}
	inUse, inUseShort := idle()
	_, goneShort := idle()

	turn, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = turn.Rollback(ctx) }()
	_, err = turn.Exec(ctx, `UPDATE conversations SET message_seq = message_seq + 1, updated_at = now() WHERE id = $1`, inUse)
	require.NoError(t, err)
	_, err = turn.Exec(ctx, `INSERT INTO messages (workspace_id, conversation_id, seq, role, content) VALUES ($1, $2, 1, 'user', 'back after six weeks')`, w.ID, inUse)
	require.NoError(t, err)

	// The deadline only stops a run that waits for the turn; a correct run takes milliseconds.
	runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	swept, err := erasure.Sweep(runCtx, st, 10)
	require.NoError(t, err, "the run does not wait for the turn")
	require.Equal(t, 1, swept.Conversations)
	require.NoError(t, turn.Commit(ctx))

	rows, err := st.Pool().Query(ctx, `SELECT short_id FROM conversations WHERE workspace_id = $1`, w.ID)
	require.NoError(t, err)
	shorts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{inUseShort}, shorts, "the conversation in use stays, the idle one goes")
	var messages, live, erased int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM messages WHERE conversation_id = $1`, inUse).Scan(&messages))
	require.Equal(t, 1, messages, "the turn's message is kept")
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE envelope LIKE '%' || $1 || '%'),
		count(*) FILTER (WHERE envelope LIKE '%' || $2 || '%') FROM events WHERE workspace_id = $3`, inUseShort, goneShort, w.ID).Scan(&live, &erased))
	require.Equal(t, 1, live, "the event of the conversation in use keeps its data")
	require.Zero(t, erased, "the deleted conversation's event is tombstoned")

	again, err := erasure.Sweep(ctx, st, 10)
	require.NoError(t, err)
	require.Zero(t, again.Conversations, "the conversation is active now")
}
