package workflows_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/store"
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

// TestAnEventTickWaitsForADeleteOfTheConversationsItStartsRunsOn: a tick starts a run for
// each matching event, and each run names its event's conversation, which takes the
// conversation's KEY SHARE; a delete of several conversations locks them in id order. The
// tick locks its runs' conversations first, in id order too, so the delete waits for it
// instead of each holding a conversation the other waits for (40P01 before, when the events
// came in the other order: the tick failed, and every workflow of its batch waited for the
// next tick).
func TestAnEventTickWaitsForADeleteOfTheConversationsItStartsRunsOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	low, _ := b.conversationWithContact(t)
	high, _ := b.conversationWithContact(t)
	if bytes.Compare(low.ID[:], high.ID[:]) > 0 {
		low, high = high, low
	}
	b.create(t, `
name: Openers
trigger: {type: event, event: conversation.created}
steps:
  - {id: pause, type: wait, duration: 1m}
`)
	_, err := b.st.AppendEvents(ctx, b.ws.ID, []store.NewEvent{ // the events in the other order than the ids
		{Type: "conversation.created", Data: map[string]any{"conversation_id": high.ShortID}},
		{Type: "conversation.created", Data: map[string]any{"conversation_id": low.ShortID}},
	})
	require.NoError(t, err)

	release := storetest.HoldWrites(t, b.st, "workflow_runs", "INSERT", fmt.Sprintf("NEW.conversation_id = '%s'", high.ID)) // the tick, once it has started the first run
	ticked, tickErr := storetest.InBackground(func(ctx context.Context) error {
		_, err := b.svc.Tick(ctx)
		return err
	})
	storetest.WaitBlockedOrDone(t, b.st, ticked)
	deleted, deleteErr := storetest.InBackground(func(ctx context.Context) error {
		_, err := b.st.Pool().Exec(ctx, `DELETE FROM conversations WHERE id IN (SELECT id FROM conversations WHERE id = ANY($1) ORDER BY id FOR UPDATE)`,
			[]uuid.UUID{low.ID, high.ID})
		return err
	})
	storetest.WaitWaitersOrDone(t, b.st, 2, deleted) // the delete waits for a conversation the tick holds
	release()
	<-ticked
	<-deleted
	require.NoError(t, *tickErr, "the tick")
	require.NoError(t, *deleteErr, "the delete")

	var runs, left int
	require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT count(*) FROM workflow_runs WHERE workspace_id = $1`, b.ws.ID).Scan(&runs))
	require.Equal(t, 2, runs, "both runs started, before the delete")
	require.NoError(t, b.st.Pool().QueryRow(ctx, `SELECT count(*) FROM conversations WHERE id = ANY($1)`, []uuid.UUID{low.ID, high.ID}).Scan(&left))
	require.Zero(t, left, "both deleted after the tick")
}

// TestAManualRunWaitsForAnErasureOfItsContact: a run started by hand names a conversation and
// its contact, and its row's references take the conversation's KEY SHARE, then the contact's;
// a contact's erasure locks the contact, then its conversations. The start takes the contact's
// first, so it waits for the erasure holding nothing (40P01 before: the start failed with a
// 500, and nothing retried it).
func TestAManualRunWaitsForAnErasureOfItsContact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	conv, contact := b.conversationWithContact(t)
	wf := b.create(t, `
name: By hand
trigger: {type: manual}
steps:
  - {id: pause, type: wait, duration: 1m}
`)
	erasure, err := b.st.Pool().Begin(ctx) // an erasure of the contact, as it locks its rows
	require.NoError(t, err)
	defer func() { _ = erasure.Rollback(ctx) }()
	_, err = erasure.Exec(ctx, `SELECT id FROM contacts WHERE id = $1 FOR UPDATE`, contact.ID)
	require.NoError(t, err)

	started, startErr := storetest.InBackground(func(ctx context.Context) error {
		_, err := b.svc.StartManual(ctx, b.ws.ID, wf.ID, map[string]any{"conversation_id": conv.ShortID})
		return err
	})
	storetest.WaitBlockedOrDone(t, b.st, started) // the start waits for the contact
	_, err = erasure.Exec(ctx, `SELECT id FROM conversations WHERE id = $1 FOR UPDATE`, conv.ID)
	require.NoError(t, err, "the erasure's lock of the conversation")
	require.NoError(t, erasure.Commit(ctx))
	<-started
	require.NoError(t, *startErr, "the start")
}
