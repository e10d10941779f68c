package campaigns_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"switchboard/campaigns"
	"switchboard/catalog"
	"switchboard/contacts"
	"switchboard/manage"
	"switchboard/netguard"
	"switchboard/store"
	"switchboard/store/storetest"
)

// holdingAfter runs first in a transaction in the background, then waits until the test lets
// it go on (the returned go) before running then and committing: a writer stopped while it
// holds what first locked.
func holdingAfter(t *testing.T, st *store.Store, first, then func(ctx context.Context, tx *store.Tx) error) (goOn func(), done <-chan struct{}, errp *error) {
	t.Helper()
	held, resume := make(chan struct{}), make(chan struct{})
	done, errp = storetest.InBackground(func(ctx context.Context) error {
		return st.InTx(ctx, func(tx *store.Tx) error {
			if err := first(ctx, tx); err != nil {
				close(held)
				return err
			}
			close(held)
			<-resume
			return then(ctx, tx)
		})
	})
	<-held
	return func() { close(resume) }, done, errp
}

// TestACallsStatusWaitsForItsSendsRecord: recording the answer to a campaign's call (its
// placing) updates the campaign's counts, then the send's row; the call's final status, when
// it ends at once (busy), updates the send's row and the campaign's counts. The status takes
// the campaign's row first too, so it waits for the record instead of each holding the row
// the other needs (40P01 before: the status's webhook failed, and the carrier's callback is
// not retried).
func TestACallsStatusWaitsForItsSendsRecord(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	w.ready(t)
	eve := w.contact(t, contacts.Input{Name: ptr("Eve"), Phone: ptr("+14155550200"), Tags: []string{"promo"}, ConsentSMS: ptr(true)})
	c := w.launch(t, "Calls", "Hello!", campaigns.Audience{Tags: []string{"promo"}}, campaigns.Schedule{RatePerMinute: 2})
	var sendID uuid.UUID
	require.NoError(t, w.store.InTx(ctx, func(tx *store.Tx) error { // the decision, as decide writes it
		conv, err := tx.CreateConversation(ctx, w.ws, "telco_voice")
		if err != nil {
			return err
		}
		sendID, _, err = tx.ClaimCampaignSend(ctx, w.ws, c.ID, eve.ID, "sending", nil, &conv.ID)
		return err
	}))

	goOn, recorded, recordErr := holdingAfter(t, w.store,
		func(ctx context.Context, tx *store.Tx) error { return tx.CountCampaignSend(ctx, w.ws, c.ID, 1, 0, 0) },
		func(ctx context.Context, tx *store.Tx) error {
			return tx.FinishCampaignSend(ctx, w.ws, sendID, "sent", nil, ptr("CA-locks-1"))
		})
	ended, endErr := storetest.InBackground(func(ctx context.Context) error {
		return w.store.InTx(ctx, func(tx *store.Tx) error { return tx.ApplyCallStatus(ctx, w.ws, sendID, "busy", "undelivered") })
	})
	storetest.WaitBlockedOrDone(t, w.store, ended) // the status waits for the campaign's row
	goOn()
	<-recorded
	<-ended
	require.NoError(t, *recordErr, "the send's record")
	require.NoError(t, *endErr, "the call's status")

	got := w.get(t, c.ID)
	require.Equal(t, campaigns.Counts{Sent: 1, Undelivered: 1}, got.Counts, "each counted once")
	require.Equal(t, "sent:", w.decisions(t, c.ID)[eve.ID])
	var status string
	require.NoError(t, w.store.Pool().QueryRow(ctx, `SELECT call_status FROM campaign_sends WHERE id = $1`, sendID).Scan(&status))
	require.Equal(t, "busy", status)
}

// TestSuspendingAWorkspaceWaitsForACampaignsWorker: a campaign's worker holds its campaign's
// row until it settles on the workspace's row (a send's decision appends its
// conversation.created); suspending the workspace pauses its campaigns and marks the
// workspace suspended. It pauses them first, so it waits for the worker instead of each
// holding the row the other needs (40P01 before: the operator's command failed).
func TestSuspendingAWorkspaceWaitsForACampaignsWorker(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	w.ready(t)
	w.contact(t, contacts.Input{Name: ptr("Eve"), Phone: ptr("+14155550200"), Tags: []string{"promo"}, ConsentSMS: ptr(true)})
	c := w.launch(t, "Promo", "Spring sale!", campaigns.Audience{Tags: []string{"promo"}}, campaigns.Schedule{RatePerMinute: 2})

	goOn, decided, decideErr := holdingAfter(t, w.store,
		func(ctx context.Context, tx *store.Tx) error { _, err := tx.LockCampaign(ctx, w.ws, c.ID); return err },
		func(ctx context.Context, tx *store.Tx) error {
			_, err := tx.AppendEvents(ctx, w.ws, []store.NewEvent{{Type: "conversation.created", Data: map[string]any{"campaign_id": c.ID.String()}}})
			return err
		})
	suspended, suspendErr := storetest.InBackground(func(ctx context.Context) error {
		_, err := w.store.SuspendWorkspace(ctx, "acme")
		return err
	})
	storetest.WaitBlockedOrDone(t, w.store, suspended) // the suspension waits for the campaign's row
	goOn()
	<-decided
	<-suspended
	require.NoError(t, *decideErr, "the worker")
	require.NoError(t, *suspendErr, "the suspension")

	got := w.get(t, c.ID)
	require.Equal(t, campaigns.Paused, got.Status)
	require.Equal(t, ptr(store.PausedWorkspaceSuspended), got.PausedReason)
	ws, err := w.store.WorkspaceByID(ctx, w.ws)
	require.NoError(t, err)
	require.Equal(t, store.WorkspaceSuspended, ws.Status)
}

// TestReportBatchesOfTwoCampaignsWaitForEachOther: two replicas each commit a batch of
// delivery reports, naming sends of the same two campaigns in crossing orders. A final report
// counts its send's delivery on the campaign's row, so each batch locks both campaigns. Each
// takes them first, in id order, and the second waits for the first instead of each holding
// the campaign the other needs (40P01 before: one batch failed and its reports were applied
// again one by one, after the deadlock timeout).
func TestReportBatchesOfTwoCampaignsWaitForEachOther(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	w.ready(t)
	eve := w.contact(t, contacts.Input{Name: ptr("Eve"), Phone: ptr("+14155550200"), Tags: []string{"promo"}, ConsentSMS: ptr(true)})
	bob := w.contact(t, contacts.Input{Name: ptr("Bob"), Phone: ptr("+14155550201"), Tags: []string{"promo"}, ConsentSMS: ptr(true)})
	one := w.launch(t, "One", "Hello!", campaigns.Audience{Tags: []string{"promo"}}, campaigns.Schedule{RatePerMinute: 2})
	two := w.launch(t, "Two", "Hello again!", campaigns.Audience{Tags: []string{"promo"}}, campaigns.Schedule{RatePerMinute: 2})
	sent := func(c campaigns.Campaign, who contacts.Contact, providerID string) {
		require.NoError(t, w.store.InTx(ctx, func(tx *store.Tx) error {
			id, _, err := tx.ClaimCampaignSend(ctx, w.ws, c.ID, who.ID, "sending", nil, nil)
			if err != nil {
				return err
			}
			return tx.FinishCampaignSend(ctx, w.ws, id, "sent", nil, ptr(providerID))
		}))
	}
	// In the carrier ids' order each batch names one campaign, then the other.
	sent(one, eve, "SM-a")
	sent(two, eve, "SM-b")
	sent(two, bob, "SM-c")
	sent(one, bob, "SM-d")
	report := func(providerIDs ...string) func(ctx context.Context) error {
		batch := make([]store.Delivery, len(providerIDs))
		for i, id := range providerIDs {
			batch[i] = store.Delivery{WorkspaceID: w.ws, ChannelID: uuid.New(), ProviderID: id, Status: "delivered"}
		}
		return func(ctx context.Context) error {
			return w.store.InTx(ctx, func(tx *store.Tx) error { _, err := tx.ReportDeliveries(ctx, batch); return err })
		}
	}

	release := storetest.HoldWrites(t, w.store, "campaigns", "UPDATE", fmt.Sprintf("NEW.id = '%s'", one.ID)) // the first batch, once it has counted SM-a
	first, firstErr := storetest.InBackground(report("SM-a", "SM-b"))
	storetest.WaitBlockedOrDone(t, w.store, first)
	second, secondErr := storetest.InBackground(report("SM-c", "SM-d"))
	storetest.WaitWaitersOrDone(t, w.store, 2, second) // the second waits for a campaign the first holds
	release()
	<-first
	<-second
	require.NoError(t, *firstErr, "the first batch")
	require.NoError(t, *secondErr, "the second batch")

	for _, c := range []campaigns.Campaign{one, two} {
		require.Equal(t, campaigns.Counts{Delivered: 2}, w.get(t, c.ID).Counts, c.Name)
	}
}

// TestDeletingAnAgentWaitsForItsCampaignsWorker: a campaign's worker holds its campaign's row
// while it opens a conversation with the campaign's agent (the conversation's reference takes
// the agent's KEY SHARE); deleting the agent deletes its row, then unlinks its campaigns. The
// delete locks the agent's campaigns first, so it waits for the worker instead of each
// holding the row the other needs (40P01 before: delete_agent failed with a 500). The worker's
// conversation goes with the agent: if the worker's record of its send is then holding it,
// PostgreSQL aborts one of the two and the delete runs again, so the delete still succeeds.
func TestDeletingAnAgentWaitsForItsCampaignsWorker(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	w.ready(t)
	w.contact(t, contacts.Input{Name: ptr("Eve"), Phone: ptr("+14155550200"), Tags: []string{"promo"}, ConsentSMS: ptr(true)})
	c := w.launch(t, "Promo", "Spring sale!", campaigns.Audience{Tags: []string{"promo"}}, campaigns.Schedule{RatePerMinute: 2})
	agents := manage.New(w.store, catalog.Default(), netguard.Guard{}, nil, "http://switchboard.test")

	release := storetest.HoldWrites(t, w.store, "conversations", "INSERT", "") // the worker, once it has created the send's conversation
	ticked, tickErr := storetest.InBackground(func(ctx context.Context) error {
		return campaigns.NewWorker(w.svc, w.log).Work(ctx, &river.Job[campaigns.TickArgs]{Args: campaigns.TickArgs{WorkspaceID: w.ws, CampaignID: c.ID}})
	})
	storetest.WaitBlockedOrDone(t, w.store, ticked)
	deleted, deleteErr := storetest.InBackground(func(ctx context.Context) error {
		_, err := agents.DeleteAgent(ctx, w.ws, manage.DeleteAgentInput{AgentID: w.agentID.String()})
		return err
	})
	storetest.WaitWaitersOrDone(t, w.store, 2, deleted) // the delete waits for the campaign the worker holds
	release()
	<-ticked
	<-deleted
	require.NoError(t, *deleteErr, "the delete")
	// The worker may find its send's conversation gone with the agent, or be the one aborted:
	// its job is retried, and finds the campaign without an agent.
	t.Logf("the worker: %v", *tickErr)

	var agentID *uuid.UUID
	require.NoError(t, w.store.Pool().QueryRow(ctx, `SELECT agent_id FROM campaigns WHERE id = $1`, c.ID).Scan(&agentID))
	require.Nil(t, agentID, "the campaign is unlinked from the deleted agent")
	var left int
	require.NoError(t, w.store.Pool().QueryRow(ctx, `SELECT count(*) FROM conversations WHERE workspace_id = $1`, w.ws).Scan(&left))
	require.Zero(t, left, "the send's conversation went with its agent, after the worker committed it")
}
