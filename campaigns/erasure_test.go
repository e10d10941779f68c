package campaigns_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"switchboard/campaigns"
	"switchboard/contacts"
	"switchboard/phonenumbers"
	"switchboard/store"
	"switchboard/store/storetest"
)

// TestASendsAnswerWaitsForAnErasureOfItsContact: recording the provider's answer to a
// campaign's send updates the send's row, then charges the workspace with a ledger row
// naming the send's conversation (its KEY SHARE); an erasure of the contact locks the
// conversation, then blanks the send's row. The answer's transaction takes the
// conversation's KEY SHARE first, so whichever of the two reaches the conversation first goes
// on and the other waits: here the answer, held at the workspace's row by a batch of turns
// settling, gets there first, and the erasure runs once it has committed, blanking the
// provider's id it recorded.
//
// With the send's row first (the order before), the erasure locked the conversation and
// waited for the send's row while the answer waited for the conversation: PostgreSQL's
// deadlock detector aborted one of them (40P01).
func TestASendsAnswerWaitsForAnErasureOfItsContact(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c, eve, before, release, ticked, tickErr := sendHeldAtTheProvider(t, w)
	defer release()

	st := w.store
	settling, err := st.Pool().Begin(ctx) // a batch of turns settling holds the workspace's row
	require.NoError(t, err)
	defer func() { _ = settling.Rollback(ctx) }()
	_, err = settling.Exec(ctx, `SELECT id FROM workspaces WHERE id = $1 FOR NO KEY UPDATE`, w.ws)
	require.NoError(t, err)
	release()
	storetest.WaitBlockedOrDone(t, st, ticked) // the answer's record waits for the workspace's row
	erased, eraseErr := storetest.InBackground(func(ctx context.Context) error {
		return st.InTx(ctx, func(tx *store.Tx) error { _, err := tx.EraseContact(ctx, w.ws, eve.ID); return err })
	})
	storetest.WaitWaitersOrDone(t, st, 2, erased) // and the erasure for what the answer holds
	require.NoError(t, settling.Commit(ctx))
	<-ticked
	<-erased
	require.NoError(t, *tickErr, "the send")
	require.NoError(t, *eraseErr, "the erasure")

	require.Equal(t, "sent:", w.decisions(t, c.ID)[eve.ID])
	require.Len(t, w.sms.Messages(), 1)
	var provider, linked int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(provider_message_id) FROM campaign_sends WHERE campaign_id = $1`, c.ID).Scan(&provider))
	require.Zero(t, provider, "the provider's id, recorded by the answer, blanked by the erasure after it")
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(conversation_id) FROM ledger WHERE workspace_id = $1 AND category = 'sms'`, w.ws).Scan(&linked))
	require.Zero(t, linked, "the erasure, after the answer, unlinked its charge from the conversation")
	require.Equal(t, before-phonenumbers.NanoUSDPerCredit, w.balance(t), "the send is charged once")
}

// TestASendWhoseConversationWasDeletedIsRecordedAndCharged: the provider accepts a campaign's
// message while the send's conversation is being deleted (its agent deleted, a bulk delete,
// retention). The answer is still recorded and charged: the send counts as sent, its charge's
// ledger row and spend.recorded name no conversation. Before, looking up the conversation for
// the charge failed every retry: the send stayed `sending`, neither counted nor charged.
func TestASendWhoseConversationWasDeletedIsRecordedAndCharged(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c, eve, before, release, ticked, tickErr := sendHeldAtTheProvider(t, w)
	defer release()
	_, err := w.store.Pool().Exec(ctx, `DELETE FROM conversations WHERE workspace_id = $1`, w.ws)
	require.NoError(t, err)
	release()
	<-ticked
	require.NoError(t, *tickErr, "the send")

	require.Equal(t, "sent:", w.decisions(t, c.ID)[eve.ID])
	require.Equal(t, campaigns.Counts{Sent: 1}, w.get(t, c.ID).Counts)
	var charges, linked int
	require.NoError(t, w.store.Pool().QueryRow(ctx, `SELECT count(*), count(conversation_id) FROM ledger WHERE workspace_id = $1 AND category = 'sms'`,
		w.ws).Scan(&charges, &linked))
	require.Equal(t, []int{1, 0}, []int{charges, linked}, "charged once, naming no conversation")
	require.Equal(t, before-phonenumbers.NanoUSDPerCredit, w.balance(t))
	var named int
	require.NoError(t, w.store.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE envelope::jsonb->'data' ? 'conversation_id') FROM events
		WHERE workspace_id = $1 AND type = 'spend.recorded'`, w.ws).Scan(&named))
	require.Zero(t, named, "its spend.recorded names no conversation")
}

// sendHeldAtTheProvider launches a campaign of one contact (Eve) and works its sending job in
// the background until its one send is decided and waits at the fake provider, whose answer
// release lets go; before is the workspace's balance before the send. The job's snooze until
// its next period counts as success.
func sendHeldAtTheProvider(t *testing.T, w *world) (c campaigns.Campaign, eve contacts.Contact, before int64, release func(), ticked <-chan struct{}, tickErr *error) {
	t.Helper()
	w.ready(t)
	eve = w.contact(t, contacts.Input{Name: ptr("Eve"), Phone: ptr("+14155550200"), Tags: []string{"promo"}, ConsentSMS: ptr(true)})
	before = w.balance(t)
	c = w.launch(t, "Promo", "Spring sale!", campaigns.Audience{Tags: []string{"promo"}}, campaigns.Schedule{RatePerMinute: 2})
	release = w.sms.Hold()
	ticked, tickErr = storetest.InBackground(func(ctx context.Context) error {
		err := campaigns.NewWorker(w.svc, w.log).Work(ctx, &river.Job[campaigns.TickArgs]{Args: campaigns.TickArgs{WorkspaceID: w.ws, CampaignID: c.ID}})
		if snooze := (*rivertype.JobSnoozeError)(nil); errors.As(err, &snooze) {
			return nil // until the next period: the campaign's one send is decided
		}
		return err
	})
	w.sms.WaitHeld(t, 1, 20*time.Second) // the send is decided and at the provider
	return c, eve, before, release, ticked, tickErr
}
