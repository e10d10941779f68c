package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/compliance"
	"switchboard/sms/smstest"
	"switchboard/store"
)

// A carrier's delivery report can come while the send's record (the carrier's id) is still
// being committed: the report cannot see the id yet, and the send has already looked for the
// reports that came before it. Whatever the order, the report must be applied, once: the
// reply ends delivered, the campaign counts it once, and a late report moves nothing back.
// The order is driven by hand: each send's record (the statements channels.finish and the
// campaign worker run) is held open in a transaction while the signed report is posted, and
// committed once the report has either been answered or is waiting for it.
func TestSMSDeliveryReportArrivingWhileItsSendIsRecordedIsAppliedOnce(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t, func(o *setupOpts) { o.campaignPeriod = 200 * time.Millisecond })
	b := w.b
	ctx := context.Background()
	ws := b.workspace.ID
	channelID := uuid.MustParse(w.channel.ID)
	b.accept(t, compliance.DefaultVersion)
	campaigner := b.newAgent(t, "Campaign agent")
	d, err := b.store.DeployAgent(ctx, ws, store.Deploy{AgentID: uuid.MustParse(campaigner), ChannelType: "sms", Config: json.RawMessage(`{}`)})
	require.NoError(t, err)
	b.newContact(t, `{"name":"Ann","phone":"`+ann+`","tags":["promo"],"consent_sms":true}`)
	c := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns", `{"name":"Promo","agent_id":"`+campaigner+`","deployment_id":"`+d.ID.String()+
		`","first_message":"Fresh croissants today!","audience":{"tags":["promo"]}}`, 201))
	get := func() campaignView {
		return decode[campaignView](t, b.send(t, http.MethodGet, "/api/campaigns/"+c.ID, "", 200))
	}
	require.Eventually(t, func() bool { return get().Status == "completed" }, 20*time.Second, 20*time.Millisecond)
	w.text(t, ann, "Two please", "SM00000000000000000000000000000050")
	reply := w.waitReplies(t, ann, 2)[1]
	var replyID, sendID uuid.UUID
	// The carrier has answered; its answer may still be committing.
	require.Eventually(t, func() bool {
		return b.store.Pool().QueryRow(ctx, `SELECT id FROM channel_messages WHERE provider_message_id = $1`, reply.SID).Scan(&replyID) == nil
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT id FROM campaign_sends WHERE campaign_id = $1 AND status = 'sent'`, c.ID).Scan(&sendID))

	// report posts a signed status callback, as the carrier does.
	signedURL, target := w.hookPath(t, "/status")
	report := func(sid, status string) error {
		form := smstest.StatusForm(sid, status, lineNumber, ann)
		resp, err := smstest.PostWithSignature(ctx, http.DefaultClient, target, form, w.carrier.Sign(signedURL, form))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status callback: %d", resp.StatusCode)
		}
		return nil
	}
	// resend puts the reply (or the campaign's send) back as it is while the carrier is called.
	resend := func() {
		_, err := b.store.Pool().Exec(ctx, `UPDATE channel_messages SET status = 'sending', provider_message_id = NULL WHERE id = $1`, replyID)
		require.NoError(t, err)
		_, err = b.store.Pool().Exec(ctx, `UPDATE campaign_sends SET status = 'sending', provider_message_id = NULL, delivery = NULL WHERE id = $1`, sendID)
		require.NoError(t, err)
	}
	// record writes the carrier's answers (id sid) as the senders do, in one transaction;
	// meanwhile, before COMMIT, runs.
	record := func(replySID, sendSID string, meanwhile func()) {
		require.NoError(t, b.store.InTx(ctx, func(tx *store.Tx) error {
			if _, ok, err := tx.FinishOutbound(ctx, ws, replyID, "sending", "queued", nil, &replySID); err != nil || !ok {
				return fmt.Errorf("finish: %v %v", ok, err)
			}
			if err := tx.ApplyEarlyReports(ctx, ws, channelID, replySID); err != nil {
				return err
			}
			if err := tx.FinishCampaignSend(ctx, ws, sendID, "sent", nil, &sendSID); err != nil {
				return err
			}
			if err := tx.ApplyEarlyReports(ctx, ws, channelID, sendSID); err != nil {
				return err
			}
			meanwhile()
			return nil
		}))
	}
	// during posts the reports while the record is open, and returns once each has been
	// answered or waits on a lock of this database (then the record's COMMIT releases it).
	during := func(reports ...[2]string) (wait func()) {
		errs := make(chan error, len(reports))
		for _, r := range reports {
			go func() { errs <- report(r[0], r[1]) }()
		}
		answered := 0
		var failed error
		require.Eventually(t, func() bool {
			for drained := false; !drained; {
				select {
				case err := <-errs:
					if err != nil && failed == nil {
						failed = err
					}
					answered++
				default:
					drained = true
				}
			}
			// A report waiting for the id's lock (store.LockDeliveryReports: its class).
			var waiting int
			if err := b.store.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
				WHERE d.datname = current_database() AND l.locktype = 'advisory' AND l.classid = 584120407 AND NOT l.granted`).Scan(&waiting); err != nil && failed == nil {
				failed = err
			}
			return failed != nil || answered+waiting >= len(reports)
		}, 10*time.Second, 5*time.Millisecond)
		require.NoError(t, failed)
		return func() {
			for ; answered < len(reports); answered++ {
				require.NoError(t, <-errs)
			}
		}
	}
	status := func() (reply, delivery string, delivered int) {
		var dl *string
		require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT m.status, s.delivery, c.delivered_count FROM channel_messages m, campaign_sends s JOIN campaigns c ON c.id = s.campaign_id
			WHERE m.id = $1 AND s.id = $2`, replyID, sendID).Scan(&reply, &dl, &delivered))
		return reply, str(dl), delivered
	}
	early := func() int {
		return b.countWhere(t, `SELECT count(*) FROM early_delivery_reports WHERE channel_id = $1`, channelID)
	}

	// The reports come while the record is being committed.
	resend()
	var wait func()
	record("SMrace00000000000000000000000001", "SMrace00000000000000000000000002", func() {
		wait = during([2]string{"SMrace00000000000000000000000001", "delivered"}, [2]string{"SMrace00000000000000000000000002", "delivered"})
	})
	wait()
	r, dl, n := status()
	require.Equal(t, "delivered", r, "the reply's report is applied once its send is recorded")
	require.Equal(t, "delivered", dl)
	require.Equal(t, 1, n, "the campaign counts the delivery once")
	require.Zero(t, early(), "no report is left behind")

	// Reported again, or late with an earlier status: nothing moves back, nothing is counted twice.
	for _, st := range []string{"sent", "queued", "delivered"} {
		require.NoError(t, report("SMrace00000000000000000000000001", st))
		require.NoError(t, report("SMrace00000000000000000000000002", st))
	}
	r, dl, n = status()
	require.Equal(t, []any{"delivered", "delivered", 1}, []any{r, dl, n})

	// The reports come before the record begins: kept, then applied by the send's record.
	resend()
	_, err = b.store.Pool().Exec(ctx, `UPDATE campaigns SET delivered_count = 0 WHERE id = $1`, c.ID)
	require.NoError(t, err)
	require.NoError(t, report("SMrace00000000000000000000000003", "sent"))
	require.NoError(t, report("SMrace00000000000000000000000003", "delivered"))
	require.NoError(t, report("SMrace00000000000000000000000004", "delivered"))
	require.Equal(t, 3, early())
	record("SMrace00000000000000000000000003", "SMrace00000000000000000000000004", func() {})
	r, dl, n = status()
	require.Equal(t, []any{"delivered", "delivered", 1}, []any{r, dl, n})
	require.Zero(t, early())

	// A later `sent` after `delivered` (the order they were taken in) does not move it back.
	require.NoError(t, report("SMrace00000000000000000000000003", "sent"))
	r, _, _ = status()
	require.Equal(t, "delivered", r)
}
