package workflows_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/store/storetest"
	"switchboard/workflows"
)

// TestARunsStepWaitsForADeleteOfItsConversation: a step's record locks the run's row, then
// writes the step's effect (here a label on the run's conversation); deleting the
// conversation (a bulk delete, retention) locks it, then clears the runs' link to it. The
// record takes the conversation's KEY SHARE (and its contact's) before the run's row, so the
// delete waits for it instead of each holding the row the other needs (40P01 before: one of
// the two failed, and a retried step could call its model or endpoint again).
func TestARunsStepWaitsForADeleteOfItsConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	conv, _ := b.conversationWithContact(t)
	wf := b.create(t, `
name: Tag it
trigger: {type: manual}
steps:
  - id: tag
    type: apply_label
    label: vip
`)
	r := b.start(t, wf, map[string]any{"conversation_id": conv.ShortID})

	release := storetest.HoldWrites(t, b.st, "workflow_run_steps", "INSERT OR UPDATE", "NEW.status = 'succeeded'") // a step's record

	id := b.runID(t, r)
	advanced, advanceErr := storetest.InBackground(func(ctx context.Context) error {
		_, err := b.svc.Advance(ctx, b.ws.ID, id)
		return err
	})
	storetest.WaitBlockedOrDone(t, b.st, advanced) // the step's record is held after the run's row
	deleted, deleteErr := storetest.InBackground(func(ctx context.Context) error {
		_, err := b.st.Pool().Exec(ctx, `DELETE FROM conversations WHERE id = $1`, conv.ID)
		return err
	})
	storetest.WaitWaitersOrDone(t, b.st, 2, deleted) // and the delete for what the record holds
	release()
	<-advanced
	<-deleted
	require.NoError(t, *advanceErr, "the run")
	require.NoError(t, *deleteErr, "the delete")

	got := b.run(t, r)
	require.Equal(t, workflows.RunSucceeded, got.Status, got.Error)
	var left int
	require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT count(*) FROM conversations WHERE id = $1`, conv.ID).Scan(&left))
	require.Zero(t, left, "deleted after the step")
}
