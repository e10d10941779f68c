package manage_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"switchboard/manage"
	"switchboard/netguard"
	"switchboard/store/storetest"
)

// TestReingestingASourceWaitsForALanguageChangeOfItsAgent: ingesting a source again deletes
// its chunks, and the delete's trigger then counts a new generation on the knowledge base's
// row; changing the agent's language updates the knowledge base's row, then every chunk of
// it (migration 0029). The ingestion locks the knowledge base first, so the language change
// waits for it instead of each holding what the other needs (40P01 before: update_agent
// failed with a 500, or the ingestion was retried).
func TestReingestingASourceWaitsForALanguageChangeOfItsAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	res, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: withSources("Shop", `      - type: manual_text
        text: The shop opens at nine and closes at six; on Sundays it is closed.
`)})
	require.NoError(t, err)
	src := sourcesOf(t, b, res.AgentID)[0]
	ingester := manage.NewIngester(b.store, netguard.Guard{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	work := func(ctx context.Context) error {
		return ingester.Work(ctx, &river.Job[manage.IngestArgs]{JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 3},
			Args: manage.IngestArgs{WorkspaceID: b.ws, SourceID: src.ID}})
	}
	require.NoError(t, work(ctx), "the first ingestion")
	_, err = b.store.Pool().Exec(ctx, `UPDATE knowledge_sources SET status = 'pending' WHERE id = $1`, src.ID) // to be ingested again
	require.NoError(t, err)

	release := storetest.HoldWrites(t, b.store, "knowledge_chunks", "DELETE", "") // the second, once it has deleted the chunks
	ingested, ingestErr := storetest.InBackground(work)
	storetest.WaitBlockedOrDone(t, b.store, ingested)
	changed, changeErr := storetest.InBackground(func(ctx context.Context) error {
		_, err := b.store.Pool().Exec(ctx, `UPDATE agents SET blueprint = jsonb_set(blueprint, '{language}', '"de"') WHERE id = $1`, mustUUID(t, res.AgentID))
		return err
	})
	storetest.WaitWaitersOrDone(t, b.store, 2, changed) // the change waits for what the ingestion holds
	release()
	<-ingested
	<-changed
	require.NoError(t, *ingestErr, "the ingestion")
	require.NoError(t, *changeErr, "the language change")

	var configs []string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT array_agg(DISTINCT k.ts_config::text) FROM knowledge_chunks k WHERE k.source_id = $1`,
		src.ID).Scan(&configs))
	require.Equal(t, []string{"german"}, configs, "the new chunks are indexed in the agent's new language")
}
