package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/msgapps"
	"switchboard/msgapps/msgappstest"
)

// The rules people meet on each app beside WhatsApp (TestMsgApp1WhatsAppStopAndTheCustomerServiceWindow):
// opt-out keywords on every app, Messenger's and Instagram's 24-hour window, and none on
// Telegram.

// resendAfter makes the reply to the inbound message with the app's id look as if it were
// sent age after the person wrote: the reply job finishes, the person's messages are moved
// back by age, the reply goes back to pending and its job runs again (as a retried job would).
func (w *appWorld) resendAfter(t *testing.T, providerID string, age time.Duration) uuid.UUID {
	t.Helper()
	b, ctx := w.b, context.Background()
	var msgID uuid.UUID
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT id FROM channel_messages WHERE provider_message_id = $1 AND direction = 'inbound'`, providerID).Scan(&msgID))
	// The first reply's job records the app's answer after the send: let it finish, or it
	// would overwrite the rewind below.
	require.Eventually(t, func() bool {
		return b.countWhere(t, `SELECT count(*) FROM river_job WHERE kind = 'channel_reply' AND state = 'completed' AND args->>'message_id' = $1`, msgID.String()) == 1
	}, 30*time.Second, 10*time.Millisecond)
	_, err := b.store.Pool().Exec(ctx, `UPDATE channel_messages SET created_at = now() - make_interval(secs => $2) WHERE direction = 'inbound' AND workspace_id = $1`,
		b.workspace.ID, age.Seconds())
	require.NoError(t, err)
	_, err = b.store.Pool().Exec(ctx, `UPDATE channel_messages SET status = 'pending', provider_message_id = NULL WHERE reply_to = $1`, msgID)
	require.NoError(t, err)
	_, err = b.store.Pool().Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at)
		VALUES ($1, 'channel_reply', 3, 'channels', 'available', now())`, `{"workspace_id":"`+b.workspace.ID.String()+`","message_id":"`+msgID.String()+`"}`)
	require.NoError(t, err)
	return msgID
}

// replyState waits for the reply to an inbound message to leave pending and sending.
func (w *appWorld) replyState(t *testing.T, msgID uuid.UUID) (status, reason string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var r *string
		err := w.b.store.Pool().QueryRow(context.Background(), `SELECT status, reason FROM channel_messages WHERE reply_to = $1`, msgID).Scan(&status, &r)
		reason = str(r)
		return err == nil && status != "pending" && status != "sending"
	}, 30*time.Second, 10*time.Millisecond, "a job inserted without River's notice waits for its poll, slow on a busy machine")
	return status, reason
}

func TestMsgApp2And3MessengerAndInstagramStopAndTheirWindow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ provider, object, key, account string }{
		{"msgapp_2", "page", "page_id", pageID},
		{"msgapp_3", "instagram", "instagram_account_id", igAccountID},
	} {
		t.Run(c.provider, func(t *testing.T) {
			t.Parallel()
			w := newAppWorld(t, c.provider, `{"`+c.key+`":"`+c.account+`","access_token":"page-token-000000001","app_secret":"meta-secret","verify_token":"vt"}`)
			b, ctx := w.b, context.Background()
			text := func(mid, body string) {
				t.Helper()
				require.Equal(t, http.StatusOK, w.meta(t, msgappstest.MessagingText(c.object, c.account, "PSID-7", mid, body), "meta-secret"))
			}
			sentText := func(i int) string {
				return w.sends("/messages")[i].JSON(t)["message"].(map[string]any)["text"].(string)
			}

			// Within 24 hours the agent's reply is sent.
			text("m_w1", "First question")
			w.waitSends(t, "/messages", 1)
			require.Equal(t, "answered", w.settled(t, "m_w1"))

			// After it, the app refuses a standard message: it is not sent, it fails
			// needs_template, and the conversation is marked.
			msgID := w.resendAfter(t, "m_w1", 25*time.Hour)
			status, reason := w.replyState(t, msgID)
			require.Equal(t, [2]string{"failed", "needs_template"}, [2]string{status, reason})
			require.Len(t, w.sends("/messages"), 1, "not sent outside the window")
			require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM conversation_threads WHERE remote = 'PSID-7' AND needs_template_at IS NOT NULL`))

			// Writing again opens it.
			text("m_w2", "Hello again")
			w.waitSends(t, "/messages", 2)
			require.Equal(t, "answered", w.settled(t, "m_w2"))
			require.Zero(t, b.countWhere(t, `SELECT count(*) FROM conversation_threads WHERE remote = 'PSID-7' AND needs_template_at IS NOT NULL`))

			// STOP (any of the SMS keywords) opts the person out of this page or account:
			// confirmed once, then nothing is answered, until START.
			text("m_w3", "unsubscribe")
			w.waitSends(t, "/messages", 3)
			require.Contains(t, sentText(2), "unsubscribed")
			out, err := b.store.OptedOut(ctx, b.workspace.ID, c.account, "PSID-7")
			require.NoError(t, err)
			require.True(t, out)
			text("m_w4", "Still there?")
			require.Equal(t, "stored", w.settled(t, "m_w4"))
			require.Len(t, w.sends("/messages"), 3)
			text("m_w5", "START")
			w.waitSends(t, "/messages", 4)
			out, err = b.store.OptedOut(ctx, b.workspace.ID, c.account, "PSID-7")
			require.NoError(t, err)
			require.False(t, out)
			text("m_w6", "Back again")
			w.waitSends(t, "/messages", 5)
			require.Equal(t, "answered", w.settled(t, "m_w6"))
		})
	}
}

func TestMsgApp4TelegramStopAndNoWindow(t *testing.T) {
	t.Parallel()
	w := newAppWorld(t, "msgapp_4", `{"bot_token":"`+botToken+`"}`)
	b, ctx := w.b, context.Background()
	inboundToken := (*w.channel.InboundURL)[strings.LastIndex(*w.channel.InboundURL, "/")+1:]
	secret := msgapps.TelegramSecret(botToken, inboundToken)
	update := func(n int64, text string) {
		t.Helper()
		status, _ := w.post(t, msgappstest.TelegramText(2000+n, 777000222, n, "Ann", text), http.Header{msgapps.TelegramSecretHeader: {secret}})
		require.Equal(t, http.StatusOK, status)
	}
	update(1, "First question")
	w.waitSends(t, "/sendMessage", 1)
	require.Equal(t, "answered", w.settled(t, "777000222:1"))

	// Telegram has no customer-service window: a bot may answer a week later.
	msgID := w.resendAfter(t, "777000222:1", 7*24*time.Hour)
	status, reason := w.replyState(t, msgID)
	require.Equal(t, "queued", status, reason)
	w.waitSends(t, "/sendMessage", 2)
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM conversation_threads WHERE needs_template_at IS NOT NULL AND workspace_id = $1`, b.workspace.ID))

	// STOP opts the chat out of the bot, as on SMS: confirmed once, then nothing is answered, until START.
	update(2, "STOP")
	sent := w.waitSends(t, "/sendMessage", 3)
	require.Contains(t, sent[2].JSON(t)["text"], "unsubscribed")
	out, err := b.store.OptedOut(ctx, b.workspace.ID, "123456789", "777000222")
	require.NoError(t, err)
	require.True(t, out)
	update(3, "Still there?")
	require.Equal(t, "stored", w.settled(t, "777000222:3"))
	require.Len(t, w.sends("/sendMessage"), 3)
	update(4, "start")
	w.waitSends(t, "/sendMessage", 4)
	update(5, "Back again")
	w.waitSends(t, "/sendMessage", 5)
	require.Equal(t, "answered", w.settled(t, "777000222:5"))
}
