package erasure_test

import (
	"context"
	"slices"
	"testing"

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
