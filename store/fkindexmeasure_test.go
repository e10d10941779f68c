//go:build bulkbench

package store_test

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestMeasureForeignKeyIndexes measures what the foreign-key indexes of migrations 0041 and
// 0042 change, as docs/benchmarks.md reports it: the same data in two databases, one with the
// schema of this tree ("after") and one without those indexes ("before"), the operations run
// alternately so that both share the machine's load. Not a unit test (no timing is
// asserted); run it with `make bench-bulk`.
//
//   - A knowledge search of an agent with 3 sources, in a database holding 20,000 sources of
//     other workspaces' knowledge bases (the search plan, in every agent turn's read too,
//     collects the agent's sources by knowledge base).
//   - Deleting 1,000 conversations (one batch of a bulk delete) of a workspace whose campaigns
//     sent 100,000 messages, 1,000 of them in those conversations (each deleted conversation
//     sets its sends' link to null).
//   - Deleting a user who was assigned 10 of the workspace's 100,000 conversations.
func TestMeasureForeignKeyIndexes(t *testing.T) {
	ctx := context.Background()
	after, before := storetest.New(t), storetest.New(t)
	for _, name := range foreignKeyIndexes(t) {
		_, err := before.Pool().Exec(ctx, `DROP INDEX `+name)
		require.NoError(t, err)
	}
	type db struct {
		name  string
		s     *store.Store
		ws    uuid.UUID
		agent uuid.UUID
	}
	dbs := []*db{{name: "before", s: before}, {name: "after", s: after}}
	for _, d := range dbs {
		d.ws, d.agent = seedForeignKeyMeasure(t, d.s)
	}
	measure := func(what string, rounds int, op func(d *db) time.Duration) {
		times := map[string][]time.Duration{}
		for range rounds {
			for _, d := range dbs {
				times[d.name] = append(times[d.name], op(d))
			}
		}
		b, a := median(times["before"]), median(times["after"])
		t.Logf("%s: before %s, after %s (median of %d, alternating): after / before %.3f",
			what, b, a, rounds, a.Seconds()/b.Seconds())
	}

	measure("knowledge search, 20,000 other sources", 1000, func(d *db) time.Duration {
		began := time.Now()
		chunks, err := d.s.SearchKnowledge(ctx, d.ws, d.agent, "opening hours on sunday", 5)
		require.NoError(t, err)
		require.NotEmpty(t, chunks)
		return time.Since(began)
	})
	measure("delete 1,000 conversations, 100,000 campaign sends", 3, func(d *db) time.Duration {
		var ids []uuid.UUID
		require.NoError(t, d.s.Pool().QueryRow(ctx, `
			WITH c AS (INSERT INTO conversations (workspace_id, short_id, channel)
			           SELECT $1, 'mc-' || gen_random_uuid(), 'sms' FROM generate_series(1, 1000) RETURNING id),
			     n AS (SELECT id, row_number() OVER () AS i FROM c),
			     s AS (SELECT id, row_number() OVER () AS i FROM campaign_sends WHERE workspace_id = $1 AND conversation_id IS NULL LIMIT 1000),
			     u AS (UPDATE campaign_sends cs SET conversation_id = n.id FROM n JOIN s USING (i) WHERE cs.id = s.id)
			SELECT array_agg(id) FROM n`, d.ws).Scan(&ids))
		began := time.Now()
		tag, err := d.s.Pool().Exec(ctx, `DELETE FROM conversations WHERE workspace_id = $1 AND id = ANY($2::uuid[])`, d.ws, ids)
		elapsed := time.Since(began)
		require.NoError(t, err)
		require.EqualValues(t, 1000, tag.RowsAffected())
		return elapsed
	})
	measure("delete a user, 100,000 conversations", 20, func(d *db) time.Duration {
		var user uuid.UUID
		require.NoError(t, d.s.Pool().QueryRow(ctx, `
			WITH u AS (INSERT INTO users (workspace_id, email, role) VALUES ($1, gen_random_uuid() || '@example.com', 'member') RETURNING id),
			     a AS (UPDATE conversations SET assignee_user_id = (SELECT id FROM u)
			           WHERE id IN (SELECT id FROM conversations WHERE workspace_id = $1 AND assignee_user_id IS NULL LIMIT 10))
			SELECT id FROM u`, d.ws).Scan(&user))
		began := time.Now()
		_, err := d.s.Pool().Exec(ctx, `DELETE FROM users WHERE id = $1`, user)
		elapsed := time.Since(began)
		require.NoError(t, err)
		return elapsed
	})
}

// foreignKeyIndexes names the indexes migrations 0041 and 0042 create, from their files.
func foreignKeyIndexes(t *testing.T) []string {
	created := regexp.MustCompile(`(?m)^CREATE INDEX (?:CONCURRENTLY )?(\w+)`)
	var names []string
	for _, f := range []string{"migrations/0041_foreign_key_indexes.sql", "migrations/0042_foreign_key_indexes_concurrently.sql"} {
		text, err := fs.ReadFile(store.Migrations(), f)
		require.NoError(t, err)
		for _, m := range created.FindAllSubmatch(text, -1) {
			names = append(names, string(m[1]))
		}
	}
	require.Len(t, names, 20)
	return names
}

// seedForeignKeyMeasure fills a database for TestMeasureForeignKeyIndexes and returns the
// measured workspace and its agent: 20,000 knowledge sources of 200 other workspaces, the
// agent's 3 sources with a chunk each, 100,000 conversations, and 100 campaigns that sent
// 1,000 contacts each.
func seedForeignKeyMeasure(t *testing.T, s *store.Store) (uuid.UUID, uuid.UUID) {
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := s.Pool().Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	for i := range 200 {
		w, err := s.CreateWorkspace(ctx, fmt.Sprintf("other-%d", i), 0)
		require.NoError(t, err)
		exec(`WITH a AS (INSERT INTO agents (workspace_id, name, blueprint) VALUES ($1, 'a', '{}') RETURNING id),
		           b AS (INSERT INTO knowledge_bases (workspace_id, agent_id) SELECT $1, id FROM a RETURNING id)
		      INSERT INTO knowledge_sources (workspace_id, knowledge_base_id, type, url, status)
		      SELECT $1, b.id, 'url', 'https://example.com/' || g, 'ready' FROM b, generate_series(1, 100) g`, w.ID)
	}
	w, err := s.CreateWorkspace(ctx, "measured", 0)
	require.NoError(t, err)
	var agent uuid.UUID
	require.NoError(t, s.Pool().QueryRow(ctx, `
		WITH a AS (INSERT INTO agents (workspace_id, name, blueprint) VALUES ($1, 'measured', '{}') RETURNING id),
		     b AS (INSERT INTO knowledge_bases (workspace_id, agent_id) SELECT $1, id FROM a RETURNING id),
		     s AS (INSERT INTO knowledge_sources (workspace_id, knowledge_base_id, type, url, status)
		           SELECT $1, b.id, 'url', 'https://example.com/hours/' || g, 'ready' FROM b, generate_series(1, 3) g RETURNING id)
		INSERT INTO knowledge_chunks (workspace_id, source_id, url, title, content)
		SELECT $1, s.id, 'https://example.com/hours', 'Hours', 'Our opening hours: Monday to Saturday 9 to 5, Sunday 10 to 4.' FROM s
		RETURNING (SELECT id FROM a)`, w.ID).Scan(&agent))
	exec(`INSERT INTO conversations (workspace_id, short_id, channel)
	      SELECT $1, 'mc-seed-' || g, 'sms' FROM generate_series(1, 100000) g`, w.ID)
	exec(`WITH c AS (INSERT INTO contacts (workspace_id, name) SELECT $1, 'c' || g FROM generate_series(1, 1000) g RETURNING id),
	           k AS (INSERT INTO campaigns (workspace_id, name) SELECT $1, 'k' || g FROM generate_series(1, 100) g RETURNING id)
	      INSERT INTO campaign_sends (workspace_id, campaign_id, contact_id, status)
	      SELECT $1, k.id, c.id, 'sent' FROM k, c`, w.ID)
	exec(`ANALYZE`)
	return w.ID, agent
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
