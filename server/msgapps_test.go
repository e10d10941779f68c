package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/llm/llmtest"
	"switchboard/msgapps"
	"switchboard/msgapps/msgappstest"
)

// The ids of the apps' accounts in these tests, and a person writing to them.
const (
	waPhoneNumberID = "106540352242922"
	waAnn           = "14155552671"
	waToken         = "EAAG-whatsapp-access-token-0001"
	waSecret        = "whatsapp-app-secret-0001"
	waVerify        = "verify-me-0001"
	pageID          = "105000000000001"
	igAccountID     = "17841400000000001"
	botToken        = "123456789:AAE-telegram-bot-token"
)

// appWorld is a server whose messaging apps are faked at the wire, with one channel of an
// app and an agent holding its inbound seat.
type appWorld struct {
	b       *testBundle
	apps    *msgappstest.Server
	channel channelView
	agentID string
}

func newAppWorld(t *testing.T, provider, config string, opts ...func(*setupOpts)) *appWorld {
	t.Helper()
	apps := msgappstest.New(t)
	b := setup(t, append([]func(*setupOpts){func(o *setupOpts) { o.msgappsURL = apps.URL }}, opts...)...)
	w := &appWorld{b: b, apps: apps}
	w.channel = decode[channelView](t, b.send(t, http.MethodPost, "/api/channels", `{"provider":"`+provider+`","name":"App line","config":`+config+`}`, 201))
	require.Equal(t, "connected", w.channel.Status, w.channel.Setup)
	w.agentID = b.newAgent(t, "App agent")
	res := b.mcp(t, b.url, b.key).ok("deploy_agent", map[string]any{"agent_id": w.agentID, "channel_id": w.channel.ID})
	require.Equal(t, true, res["inbound"])
	return w
}

func newWhatsAppWorld(t *testing.T) *appWorld {
	return newAppWorld(t, "msgapp_1", `{"phone_number_id":"`+waPhoneNumberID+`","access_token":"`+waToken+`","app_secret":"`+waSecret+`","verify_token":"`+waVerify+`"}`)
}

// target is the channel's inbound URL on the test server.
func (w *appWorld) target(t *testing.T) string {
	u, err := url.Parse(*w.channel.InboundURL)
	require.NoError(t, err)
	return w.b.url + u.Path
}

// post posts a webhook body with headers and returns the status and answer.
func (w *appWorld) post(t *testing.T, body []byte, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, w.target(t), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// meta posts a body signed as Meta signs it, with secret.
func (w *appWorld) meta(t *testing.T, body []byte, secret string) int {
	t.Helper()
	status, _ := w.post(t, body, http.Header{msgapps.SignatureHeader: {msgapps.SignMeta(secret, body)}})
	return status
}

// sends are the messages the app was asked to send (Graph: .../messages; Telegram: sendMessage).
func (w *appWorld) sends(suffix string) []msgappstest.Request { return w.apps.Requests(suffix) }

func (w *appWorld) waitSends(t *testing.T, suffix string, n int) []msgappstest.Request {
	t.Helper()
	require.Eventually(t, func() bool { return len(w.sends(suffix)) >= n }, 20*time.Second, 10*time.Millisecond, "%d sends expected", n)
	return w.sends(suffix)
}

// settled is the state an inbound message with the app's id came to rest in.
func (w *appWorld) settled(t *testing.T, id string) string {
	t.Helper()
	var status string
	require.Eventually(t, func() bool {
		err := w.b.store.Pool().QueryRow(context.Background(), `SELECT status FROM channel_messages WHERE provider_message_id = $1 AND direction = 'inbound'`, id).Scan(&status)
		return err == nil && status != "received" && status != "answering"
	}, 20*time.Second, 10*time.Millisecond)
	return status
}

func TestMsgApp1WhatsAppHandshakeAndSignedTextAnsweredThroughTheCloudAPI(t *testing.T) {
	t.Parallel()
	w := newWhatsAppWorld(t)
	b := w.b
	require.Equal(t, waPhoneNumberID, *w.channel.Address)
	require.Equal(t, "…0001", w.channel.Config["access_token"], "credentials are sealed, shown as a hint")

	// Meta's subscription check: the challenge for the channel's verify token, 403 otherwise.
	get := func(token string) (int, string) {
		resp, err := http.Get(w.target(t) + "?hub.mode=subscribe&hub.verify_token=" + url.QueryEscape(token) + "&hub.challenge=1158201444")
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	status, body := get(waVerify)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "1158201444", body)
	status, _ = get("not-the-token")
	require.Equal(t, http.StatusForbidden, status)

	const id = "wamid.HBgLMTQxNTU1NTI2NzEVAgASGBQzQTRBRUU0"
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppMessage(waPhoneNumberID, waAnn, "Ann Lee", id, "text", "When do you **open**?"), waSecret))
	sent := w.waitSends(t, "/messages", 1)
	require.Equal(t, "/"+waPhoneNumberID+"/messages", sent[0].Path)
	require.Equal(t, "Bearer "+waToken, sent[0].Header.Get("Authorization"))
	require.JSONEq(t, `{"messaging_product":"whatsapp","recipient_type":"individual","to":"`+waAnn+`","type":"text",
		"text":{"preview_url":false,"body":"reply to: When do you *open*?"}}`, string(sent[0].Body), "WhatsApp's bold, not Markdown's")
	require.Equal(t, "answered", w.settled(t, id))

	// The contact is found or created by wa_id, with the profile name and the number.
	var name, phone *string
	var channel string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT ct.name, ct.phone, c.channel FROM contact_app_ids a
		JOIN contacts ct ON ct.id = a.contact_id JOIN conversations c ON c.contact_id = ct.id WHERE a.app = 'msgapp_1' AND a.app_user_id = $1`, waAnn).Scan(&name, &phone, &channel))
	require.Equal(t, "Ann Lee", *name)
	require.Equal(t, "+"+waAnn, *phone)
	require.Equal(t, "msgapp_1", channel)

	// Each message in and out is metered at the app's price.
	var spend []storedEvent
	require.Eventually(t, func() bool {
		spend = nil
		for _, e := range b.events(t, "spend.recorded") {
			if e.Data["category"] == "message" {
				spend = append(spend, e)
			}
		}
		return len(spend) == 2
	}, 10*time.Second, 10*time.Millisecond)
	for _, e := range spend {
		require.Equal(t, "msgapp_1", e.Data["app"])
		require.Equal(t, 1.0, e.Data["parts"])
		require.InDelta(t, 0.005, e.Data["amount_usd"], 1e-9)
		require.NotEmpty(t, e.Data["conversation_id"])
	}
	require.Equal(t, int64(5_000_000), catalog.MessagePriceNanoUSD("msgapp_1"))

	// The app's delivery status moves the reply.
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppStatus(waPhoneNumberID, "wamid.OUT000001", waAnn, "delivered"), waSecret))
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM channel_messages WHERE direction = 'outbound' AND status = 'delivered' AND workspace_id = $1`, b.workspace.ID))
}

func TestMsgApp1WhatsAppBadSignatureDuplicateAndNonText(t *testing.T) {
	t.Parallel()
	w := newWhatsAppWorld(t)
	b := w.b
	body := msgappstest.WhatsAppMessage(waPhoneNumberID, waAnn, "Ann Lee", "wamid.BAD1", "text", "Hello")
	require.Equal(t, http.StatusForbidden, w.meta(t, body, "not-the-app-secret"), "signed with another secret")
	status, _ := w.post(t, body, http.Header{})
	require.Equal(t, http.StatusForbidden, status, "not signed")
	tampered := bytes.Replace(body, []byte("Hello"), []byte("Hallo"), 1)
	status, _ = w.post(t, tampered, http.Header{msgapps.SignatureHeader: {msgapps.SignMeta(waSecret, body)}})
	require.Equal(t, http.StatusForbidden, status, "a changed body")
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM channel_messages WHERE workspace_id = $1`, b.workspace.ID), "nothing stored")
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM contact_app_ids WHERE workspace_id = $1`, b.workspace.ID))

	// A retried webhook (same message id) is answered once.
	b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "We open at nine.", Delay: 300 * time.Millisecond})
	dup := msgappstest.WhatsAppMessage(waPhoneNumberID, waAnn, "Ann Lee", "wamid.DUP1", "text", "Open?")
	for range 3 {
		require.Equal(t, http.StatusOK, w.meta(t, dup, waSecret))
	}
	w.waitSends(t, "/messages", 1)
	require.Equal(t, "answered", w.settled(t, "wamid.DUP1"))
	time.Sleep(200 * time.Millisecond)
	require.Len(t, w.sends("/messages"), 1)
	require.Len(t, b.vendors[catalog.Beta].Requests(), 1)

	// An image: one polite reply without the model, a placeholder in the transcript.
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppMessage(waPhoneNumberID, waAnn, "Ann Lee", "wamid.IMG1", "image", ""), waSecret))
	sent := w.waitSends(t, "/messages", 2)
	require.Contains(t, sent[1].JSON(t)["text"].(map[string]any)["body"], "only read text")
	require.Equal(t, "answered", w.settled(t, "wamid.IMG1"))
	require.Len(t, b.vendors[catalog.Beta].Requests(), 1, "no model call for an image")
	var convID uuid.UUID
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT conversation_id FROM channel_messages WHERE provider_message_id = 'wamid.IMG1'`).Scan(&convID))
	lines, err := b.store.Transcript(context.Background(), b.workspace.ID, convID)
	require.NoError(t, err)
	require.Equal(t, "user", lines[len(lines)-1].Role)
	require.Equal(t, "[image]", lines[len(lines)-1].Content)
}

func TestMsgApp1WhatsAppStopAndTheCustomerServiceWindow(t *testing.T) {
	t.Parallel()
	w := newWhatsAppWorld(t)
	b := w.b
	ctx := context.Background()
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppMessage(waPhoneNumberID, waAnn, "Ann Lee", "wamid.W1", "text", "First question"), waSecret))
	w.waitSends(t, "/messages", 1)
	require.Equal(t, "answered", w.settled(t, "wamid.W1"))

	// Outside the 24-hour window a free-form reply is not sent: it fails needs_template, and
	// the conversation is marked.
	var msgID uuid.UUID
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT id FROM channel_messages WHERE provider_message_id = 'wamid.W1'`).Scan(&msgID))
	// The first reply's job records the app's answer after the send: let it finish, or it
	// would overwrite the rewind below (seen on a busy machine).
	require.Eventually(t, func() bool {
		return b.countWhere(t, `SELECT count(*) FROM river_job WHERE kind = 'channel_reply' AND state = 'completed'`) == 1
	}, 30*time.Second, 10*time.Millisecond)
	_, err := b.store.Pool().Exec(ctx, `UPDATE channel_messages SET created_at = now() - interval '25 hours' WHERE direction = 'inbound' AND workspace_id = $1`, b.workspace.ID)
	require.NoError(t, err)
	_, err = b.store.Pool().Exec(ctx, `UPDATE channel_messages SET status = 'pending', provider_message_id = NULL WHERE reply_to = $1`, msgID)
	require.NoError(t, err)
	_, err = b.store.Pool().Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at)
		VALUES ($1, 'channel_reply', 3, 'channels', 'available', now())`, `{"workspace_id":"`+b.workspace.ID.String()+`","message_id":"`+msgID.String()+`"}`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return b.countWhere(t, `SELECT count(*) FROM channel_messages WHERE reply_to = $1 AND status = 'failed' AND reason = 'needs_template'`, msgID) == 1
	}, 30*time.Second, 10*time.Millisecond, "a job inserted without River's notice waits for its poll, slow on a busy machine")
	require.Len(t, w.sends("/messages"), 1, "not sent outside the window")
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM conversation_threads WHERE remote = $1 AND needs_template_at IS NOT NULL`, waAnn))

	// Writing again opens the window.
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppMessage(waPhoneNumberID, waAnn, "Ann Lee", "wamid.W2", "text", "Hello again"), waSecret))
	w.waitSends(t, "/messages", 2)
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM conversation_threads WHERE remote = $1 AND needs_template_at IS NOT NULL`, waAnn))

	// STOP opts out as on SMS: confirmed once, then nothing is answered.
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppMessage(waPhoneNumberID, waAnn, "Ann Lee", "wamid.W3", "text", "STOP"), waSecret))
	sent := w.waitSends(t, "/messages", 3)
	require.Contains(t, sent[2].JSON(t)["text"].(map[string]any)["body"], "unsubscribed")
	out, err := b.store.OptedOut(ctx, b.workspace.ID, waPhoneNumberID, waAnn)
	require.NoError(t, err)
	require.True(t, out)
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppMessage(waPhoneNumberID, waAnn, "Ann Lee", "wamid.W4", "text", "Still there?"), waSecret))
	require.Equal(t, "stored", w.settled(t, "wamid.W4"))
	require.Len(t, w.sends("/messages"), 3)
}

func TestMsgApp4TelegramWebhookRegisteredSecretCheckedAndAnswered(t *testing.T) {
	t.Parallel()
	w := newAppWorld(t, "msgapp_4", `{"bot_token":"`+botToken+`"}`)
	b := w.b
	require.Equal(t, "123456789", *w.channel.Address)
	inboundToken := (*w.channel.InboundURL)[strings.LastIndex(*w.channel.InboundURL, "/")+1:]
	secret := msgapps.TelegramSecret(botToken, inboundToken)
	hooks := w.apps.Requests("/setWebhook")
	require.Len(t, hooks, 1, "the webhook is registered at connect time")
	require.Equal(t, "/bot"+botToken+"/setWebhook", hooks[0].Path)
	require.JSONEq(t, `{"url":"`+*w.channel.InboundURL+`","secret_token":"`+secret+`","allowed_updates":["message"]}`, string(hooks[0].Body))
	b.send(t, http.MethodPatch, "/api/channels/"+w.channel.ID, `{"name":"Bot line"}`, 200)
	require.Len(t, w.apps.Requests("/setWebhook"), 2, "and again on PATCH")

	update := msgappstest.TelegramText(1001, 777000111, 5, "Ann", "When do you **open**?")
	status, _ := w.post(t, update, http.Header{msgapps.TelegramSecretHeader: {"wrong"}})
	require.Equal(t, http.StatusForbidden, status)
	status, _ = w.post(t, update, http.Header{})
	require.Equal(t, http.StatusForbidden, status)
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM channel_messages WHERE workspace_id = $1`, b.workspace.ID))

	for range 2 {
		status, _ = w.post(t, update, http.Header{msgapps.TelegramSecretHeader: {secret}})
		require.Equal(t, http.StatusOK, status)
	}
	sent := w.waitSends(t, "/sendMessage", 1)
	require.Equal(t, "/bot"+botToken+"/sendMessage", sent[0].Path)
	require.JSONEq(t, `{"chat_id":777000111,"text":"reply to: When do you <b>open</b>?","parse_mode":"HTML"}`, string(sent[0].Body))
	require.Equal(t, "answered", w.settled(t, "777000111:5"))
	var name *string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT ct.name FROM contact_app_ids a JOIN contacts ct ON ct.id = a.contact_id
		WHERE a.app = 'msgapp_4' AND a.app_user_id = '777000111'`).Scan(&name))
	require.Equal(t, "Ann", *name)

	status, _ = w.post(t, msgappstest.TelegramSticker(1002, 777000111, 6, "Ann"), http.Header{msgapps.TelegramSecretHeader: {secret}})
	require.Equal(t, http.StatusOK, status)
	sent = w.waitSends(t, "/sendMessage", 2)
	require.Contains(t, sent[1].JSON(t)["text"], "only read text")
	time.Sleep(200 * time.Millisecond)
	require.Len(t, w.sends("/sendMessage"), 2, "the retried update was answered once")
	require.Len(t, b.vendors[catalog.Beta].Requests(), 1)
}

func TestMsgApp4TelegramRefusedTokenNeedsSetup(t *testing.T) {
	t.Parallel()
	apps := msgappstest.New(t)
	apps.RefuseToken("42:refused")
	b := setup(t, func(o *setupOpts) { o.msgappsURL = apps.URL })
	ch := decode[channelView](t, b.send(t, http.MethodPost, "/api/channels", `{"provider":"msgapp_4","name":"Bot","config":{"bot_token":"42:refused"}}`, 201))
	require.Equal(t, "needs_setup", ch.Status)
	require.Contains(t, *ch.Setup, "Unauthorized")
	require.Empty(t, apps.Requests("/setWebhook"))
	b.send(t, http.MethodPost, "/api/channels", `{"provider":"msgapp_4","name":"Bot","config":{"bot_token":"not a token"}}`, 400)
	b.send(t, http.MethodPost, "/api/channels", `{"provider":"msgapp_1","name":"WA","config":{"phone_number_id":"1"}}`, 400)
}

func TestMsgApp2And3MessengerAndInstagramAnswerThroughTheSendAPI(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ provider, object, key, account, path, want string }{
		{"msgapp_2", "page", "page_id", pageID, "/" + pageID + "/messages",
			`{"recipient":{"id":"PSID-1"},"messaging_type":"RESPONSE","message":{"text":"reply to: When do you open?"}}`},
		{"msgapp_3", "instagram", "instagram_account_id", igAccountID, "/ig/" + igAccountID + "/messages",
			`{"recipient":{"id":"PSID-1"},"message":{"text":"reply to: When do you open?"}}`},
	} {
		w := newAppWorld(t, c.provider, `{"`+c.key+`":"`+c.account+`","access_token":"page-token-000000001","app_secret":"meta-secret","verify_token":"vt"}`)
		require.Equal(t, http.StatusForbidden, w.meta(t, msgappstest.MessagingText(c.object, c.account, "PSID-1", "m_1", "Hi"), "other"))
		require.Equal(t, http.StatusOK, w.meta(t, msgappstest.MessagingText(c.object, c.account, "PSID-1", "m_1", "When do you **open**?"), "meta-secret"))
		require.Equal(t, http.StatusOK, w.meta(t, msgappstest.MessagingText(c.object, c.account, "PSID-1", "m_1", "When do you **open**?"), "meta-secret"))
		sent := w.waitSends(t, "/messages", 1)
		require.Equal(t, c.path, sent[0].Path)
		require.Equal(t, "Bearer page-token-000000001", sent[0].Header.Get("Authorization"))
		require.JSONEq(t, c.want, string(sent[0].Body), "plain text: Markdown removed")
		require.Equal(t, http.StatusOK, w.meta(t, msgappstest.MessagingAttachment(c.object, c.account, "PSID-1", "m_2", "audio"), "meta-secret"))
		sent = w.waitSends(t, "/messages", 2)
		require.Contains(t, sent[1].JSON(t)["message"].(map[string]any)["text"], "only read text")
		time.Sleep(100 * time.Millisecond)
		require.Len(t, w.sends("/messages"), 2)
	}
}
