package erasure_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/erasure"
	"switchboard/store"
	"switchboard/store/storetest"
)

// TestSweepAppliesEachAgentsPeriod: the retention job deletes exactly the conversations past
// the period that applies to each (its agent's where the blueprint sets one, else its
// workspace's), in every workspace that has one, in batches smaller than what there is to
// delete: conversations kept by an agent's longer period among the expired ones, and several
// last active at the same instant across a batch's edge, are neither skipped nor deleted.
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
	n := 0
	// conversations adds count conversations last active daysAgo days ago (the same
	// instant for all of them), to expired or kept.
	conversations := func(ws uuid.UUID, agent *uuid.UUID, daysAgo, count int, expires bool) {
		for range count {
			n++
			short := fmt.Sprintf("mc-%d-%d", n, daysAgo)
			_, err := st.Pool().Exec(ctx, `INSERT INTO conversations (workspace_id, short_id, channel, agent_id, updated_at)
				VALUES ($1, $2, 'api', $3, date_trunc('day', now()) - make_interval(days => $4))`, ws, short, agent, daysAgo)
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
	var left []string
	rows, err := st.Pool().Query(ctx, `SELECT short_id FROM conversations`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		left = append(left, s)
	}
	require.NoError(t, rows.Err())
	slices.Sort(left)
	slices.Sort(kept)
	require.Equal(t, kept, left, "what the periods keep, and only that")

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
