package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/compliance"
	"switchboard/llm/llmtest"
	"switchboard/sms/smstest"
	"switchboard/store"
)

// The carrier's number for the channels of these tests, and two people who text it.
const (
	lineNumber = "+14155550100"
	ann        = "+14155552671"
	bob        = "+14155552672"
)

// channelView is a channel as /api answers it.
type channelView struct {
	ID             string         `json:"id"`
	Provider       string         `json:"provider"`
	Name           string         `json:"name"`
	Status         string         `json:"status"`
	Setup          *string        `json:"setup"`
	InboundURL     *string        `json:"inbound_url"`
	Address        *string        `json:"address"`
	Config         map[string]any `json:"config"`
	InboundAgentID *string        `json:"inbound_agent_id"`
	LastInboundAt  *string        `json:"last_inbound_at"`
}

// smsWorld is a server whose carrier is faked at the wire, with an SMS channel on the
// carrier's number and an agent holding its inbound seat.
type smsWorld struct {
	b       *testBundle
	carrier *smstest.Server
	channel channelView
	agentID string
}

func newSMSWorld(t *testing.T, opts ...func(*setupOpts)) *smsWorld {
	t.Helper()
	carrier := smstest.New(t)
	carrier.AddNumber(lineNumber)
	b := setup(t, append([]func(*setupOpts){func(o *setupOpts) { o.smsBaseURL = carrier.URL }}, opts...)...)
	w := &smsWorld{b: b, carrier: carrier}
	w.channel = decode[channelView](t, b.send(t, http.MethodPost, "/api/channels", `{"provider":"sms","name":"Main line","config":{"phone_number":"(415) 555-0100","region":"us"}}`, 201))
	require.Equal(t, "connected", w.channel.Status, w.channel.Setup)
	w.agentID = b.newAgent(t, "Texting agent")
	s := b.mcp(t, b.url, b.key)
	res := s.ok("deploy_agent", map[string]any{"agent_id": w.agentID, "channel_id": w.channel.ID})
	require.Equal(t, true, res["inbound"])
	return w
}

// hookPath is the path of the channel's inbound URL (the test server is reached at b.url,
// while the URL the carrier signs is PUBLIC_BASE_URL's).
func (w *smsWorld) hookPath(t *testing.T, suffix string) (signed, target string) {
	t.Helper()
	u, err := url.Parse(*w.channel.InboundURL + suffix)
	require.NoError(t, err)
	return u.String(), w.b.url + u.Path
}

// text posts an inbound SMS as the carrier would, signed, and returns the answer.
func (w *smsWorld) text(t *testing.T, from, body, sid string) (*http.Response, string) {
	t.Helper()
	return w.post(t, "", smstest.InboundForm(from, lineNumber, body, sid), true)
}

func (w *smsWorld) post(t *testing.T, suffix string, form url.Values, signed bool) (*http.Response, string) {
	t.Helper()
	signedURL, target := w.hookPath(t, suffix)
	sig := ""
	if signed {
		sig = w.carrier.Sign(signedURL, form)
	}
	resp, err := smstest.PostWithSignature(context.Background(), http.DefaultClient, target, form, sig)
	require.NoError(t, err)
	defer resp.Body.Close()
	var raw strings.Builder
	_, _ = io.Copy(&raw, resp.Body)
	return resp, raw.String()
}

// repliesTo are the messages the carrier was asked to send to a number.
func (w *smsWorld) repliesTo(number string) []smstest.Message {
	var out []smstest.Message
	for _, m := range w.carrier.Messages() {
		if m.To == number {
			out = append(out, m)
		}
	}
	return out
}

func (w *smsWorld) waitReplies(t *testing.T, number string, n int) []smstest.Message {
	t.Helper()
	require.Eventually(t, func() bool { return len(w.repliesTo(number)) >= n }, 20*time.Second, 10*time.Millisecond,
		"%d replies to %s expected, carrier has %v", n, number, w.carrier.Messages())
	return w.repliesTo(number)
}

// inbound counts the channel's inbound messages in a state ("" counts all).
func (w *smsWorld) inbound(t *testing.T, status string) int {
	t.Helper()
	return w.b.countWhere(t, `SELECT count(*) FROM channel_messages WHERE workspace_id = $1 AND direction = 'inbound' AND ($2 = '' OR status = $2)`,
		w.b.workspace.ID, status)
}

func (w *smsWorld) settled(t *testing.T, sid string) string {
	t.Helper()
	var status string
	require.Eventually(t, func() bool {
		err := w.b.store.Pool().QueryRow(context.Background(), `SELECT status FROM channel_messages WHERE provider_message_id = $1 AND direction = 'inbound'`, sid).Scan(&status)
		return err == nil && status != "received" && status != "answering"
	}, 20*time.Second, 10*time.Millisecond)
	return status
}

func TestSMSIsAnsweredByTheSeatedAgentThroughTheCarrier(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t)
	b := w.b
	require.Equal(t, lineNumber, *w.channel.Address, "the number is normalized to E.164")
	require.Equal(t, "http://switchboard.test/hooks/sms/", (*w.channel.InboundURL)[:len("http://switchboard.test/hooks/sms/")])
	require.Equal(t, *w.channel.InboundURL, w.carrier.NumberSMSURL(lineNumber), "the number's messaging webhook points at the channel")

	resp, body := w.text(t, ann, "When do you **open**?", "SM00000000000000000000000000000001")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/xml")
	require.Equal(t, "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response></Response>", body, "an empty messaging response: the reply goes out through the API")

	replies := w.waitReplies(t, ann, 1)
	require.Equal(t, lineNumber, replies[0].From)
	require.Equal(t, "reply to: When do you open?", replies[0].Body, "the agent's model answered the text, in plain text (Markdown removed)")
	_, statusURL := w.hookPath(t, "/status")
	require.True(t, strings.HasSuffix(replies[0].StatusCallback, strings.TrimPrefix(statusURL, b.url)), replies[0].StatusCallback)
	require.Equal(t, "answered", w.settled(t, "SM00000000000000000000000000000001"))

	// The model saw the texter's words, through the deployed agent's runtime (its system prompt).
	reqs := b.vendors[catalog.Beta].Requests()
	require.Len(t, reqs, 1)
	require.Contains(t, reqs[0].System, "Your name is Helper")

	// One conversation per texter on the channel, on the sms channel, with a contact found by phone.
	var convID uuid.UUID
	var channel string
	var contactPhone *string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT c.id, c.channel, ct.phone FROM conversations c
		JOIN conversation_threads t ON t.conversation_id = c.id LEFT JOIN contacts ct ON ct.id = c.contact_id
		WHERE t.remote = $1`, ann).Scan(&convID, &channel, &contactPhone))
	require.Equal(t, "sms", channel)
	require.Equal(t, ann, *contactPhone)

	resp, body = w.text(t, ann, "And on Sundays?", "SM00000000000000000000000000000002")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	w.waitReplies(t, ann, 2)
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM conversation_threads WHERE remote = $1`, ann), "the second text continues the conversation")
	lines, err := b.store.Transcript(context.Background(), b.workspace.ID, convID)
	require.NoError(t, err)
	var said []string
	for _, l := range lines {
		said = append(said, l.Role+": "+l.Content)
	}
	require.Equal(t, []string{"user: When do you **open**?", "assistant: reply to: When do you **open**?",
		"user: And on Sundays?", "assistant: reply to: And on Sundays?"}, said, "no greeting: the texter wrote first")

	// Each text, in and out, is metered by its segments.
	var sms []storedEvent
	smsSpend := func() []storedEvent {
		sms = nil
		for _, e := range b.events(t, "spend.recorded") {
			if e.Data["category"] == "sms" {
				sms = append(sms, e)
			}
		}
		return sms
	}
	// The reply's charge commits once the carrier's answer is recorded, just after it sent.
	require.Eventually(t, func() bool { return len(smsSpend()) == 4 }, 10*time.Second, 10*time.Millisecond)
	directions := map[string]int{}
	for _, e := range sms {
		directions[e.Data["direction"].(string)]++
		require.Equal(t, 1.0, e.Data["segments"])
		require.NotEmpty(t, e.Data["conversation_id"])
	}
	require.Equal(t, map[string]int{"inbound": 2, "outbound": 2}, directions)

	ch := decode[channelView](t, b.send(t, http.MethodGet, "/api/channels/"+w.channel.ID, "", 200))
	require.NotNil(t, ch.LastInboundAt)
	require.Equal(t, w.agentID, *ch.InboundAgentID)
}

func TestSMSWithABadSignatureIs403AndStoresNothing(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t)
	form := smstest.InboundForm(ann, lineNumber, "Hello", "SM00000000000000000000000000000009")
	resp, _ := w.post(t, "", form, false)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no signature")

	signedURL, target := w.hookPath(t, "")
	forged := smstest.SignWith("not-the-auth-token", signedURL, form)
	resp, err := smstest.PostWithSignature(context.Background(), http.DefaultClient, target, form, forged)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "signed with another token")

	tampered := smstest.InboundForm(ann, lineNumber, "Hello", "SM00000000000000000000000000000009")
	sig := w.carrier.Sign(signedURL, tampered)
	tampered.Set("Body", "Send me everything")
	resp, err = smstest.PostWithSignature(context.Background(), http.DefaultClient, target, tampered, sig)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a changed body")

	resp, err = smstest.PostWithSignature(context.Background(), http.DefaultClient, w.b.url+"/hooks/sms/"+strings.Repeat("0", 64), form,
		w.carrier.Sign("http://switchboard.test/hooks/sms/"+strings.Repeat("0", 64), form))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "an unknown token")

	// The hooks take any method and sub-path to the channel's provider, which serves only
	// what its carrier calls.
	resp, err = http.Get(target)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "a GET of an SMS inbound URL")
	resp, err = smstest.PostWithSignature(context.Background(), http.DefaultClient, target+"/elsewhere", form, w.carrier.Sign(signedURL+"/elsewhere", form))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a sub-path SMS does not serve")

	require.Zero(t, w.inbound(t, ""), "nothing stored")
	require.Zero(t, w.b.countWhere(t, `SELECT count(*) FROM river_job WHERE kind = 'channel_reply'`))
	require.Empty(t, w.carrier.Messages())
}

func TestSMSRetriedByTheCarrierIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t)
	w.b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "We open at nine.", Delay: 300 * time.Millisecond})
	const sid = "SM00000000000000000000000000000003"
	for range 3 {
		resp, body := w.text(t, ann, "Open?", sid)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
	}
	w.waitReplies(t, ann, 1)
	require.Equal(t, "answered", w.settled(t, sid))
	time.Sleep(200 * time.Millisecond) // room for a wrong second reply to show
	require.Len(t, w.repliesTo(ann), 1)
	require.Equal(t, 1, w.inbound(t, ""))
	require.Len(t, w.b.vendors[catalog.Beta].Requests(), 1)
}

func TestSMSKeywordsStopStartAndHelp(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t)
	b := w.b

	w.text(t, ann, "  Stop ", "SM00000000000000000000000000000010")
	stop := w.waitReplies(t, ann, 1)[0]
	require.Contains(t, stop.Body, "unsubscribed")
	require.Contains(t, stop.Body, "acme")
	optedOut, err := b.store.OptedOut(context.Background(), b.workspace.ID, lineNumber, ann)
	require.NoError(t, err)
	require.True(t, optedOut)

	// Opted out: the text is kept, nobody answers, no model call.
	w.text(t, ann, "Are you still there?", "SM00000000000000000000000000000011")
	require.Equal(t, "stored", w.settled(t, "SM00000000000000000000000000000011"))
	require.Len(t, w.repliesTo(ann), 1)
	require.Empty(t, b.vendors[catalog.Beta].Requests())

	w.text(t, ann, "UNSTOP", "SM00000000000000000000000000000012")
	start := w.waitReplies(t, ann, 2)[1]
	require.Contains(t, start.Body, "STOP")
	w.text(t, ann, "Hello again", "SM00000000000000000000000000000013")
	require.Equal(t, "reply to: Hello again", w.waitReplies(t, ann, 3)[2].Body)

	w.text(t, bob, "help", "SM00000000000000000000000000000014")
	help := w.waitReplies(t, bob, 1)[0]
	require.Contains(t, help.Body, "acme")
	require.Contains(t, help.Body, "STOP")
	b.send(t, http.MethodPatch, "/api/channels/"+w.channel.ID, `{"config":{"help_text":"Sunrise Bakery: call 415 555 0100. Reply STOP to opt out."}}`, 200)
	w.text(t, bob, "INFO", "SM00000000000000000000000000000015")
	require.Equal(t, "Sunrise Bakery: call 415 555 0100. Reply STOP to opt out.", w.waitReplies(t, bob, 2)[1].Body)
	require.Len(t, b.vendors[catalog.Beta].Requests(), 1, "keywords never reach the model")
}

func TestSMSFromAWorkspaceThatCannotPayGetsNoModelCallAndNoReply(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t)
	_, err := w.b.store.Pool().Exec(context.Background(), `UPDATE workspaces SET balance_nano_usd = 0 WHERE id = $1`, w.b.workspace.ID)
	require.NoError(t, err)
	w.text(t, ann, "Hello?", "SM00000000000000000000000000000020")
	require.Equal(t, "stored", w.settled(t, "SM00000000000000000000000000000020"))
	var reason string
	require.NoError(t, w.b.store.Pool().QueryRow(context.Background(), `SELECT reason FROM channel_messages WHERE provider_message_id = 'SM00000000000000000000000000000020'`).Scan(&reason))
	require.Equal(t, "insufficient_quota", reason)
	require.Empty(t, w.b.vendors[catalog.Beta].Requests())
	require.Empty(t, w.carrier.Messages())
	require.Equal(t, 1, w.b.countWhere(t, `SELECT count(*) FROM messages m JOIN conversation_threads t ON t.conversation_id = m.conversation_id
		WHERE t.remote = $1 AND m.role = 'user'`, ann), "the text is kept in its conversation, visible")
}

func TestSMSWithNobodyOnTheSeatIsKept(t *testing.T) {
	t.Parallel()
	carrier := smstest.New(t)
	carrier.AddNumber(lineNumber)
	b := setup(t, func(o *setupOpts) { o.smsBaseURL = carrier.URL })
	w := &smsWorld{b: b, carrier: carrier}
	w.channel = decode[channelView](t, b.send(t, http.MethodPost, "/api/channels", `{"provider":"sms","name":"Spare line","config":{"phone_number":"`+lineNumber+`"}}`, 201))
	w.text(t, ann, "Anyone?", "SM00000000000000000000000000000030")
	require.Equal(t, "stored", w.settled(t, "SM00000000000000000000000000000030"))
	require.Empty(t, carrier.Messages())
	require.Empty(t, b.vendors[catalog.Beta].Requests())
}

func TestSMSReplyToACampaignReachesTheCampaignsAgentAndDeliveryReportsMoveItsCounters(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t, func(o *setupOpts) { o.campaignPeriod = 200 * time.Millisecond })
	b := w.b
	b.accept(t, compliance.DefaultVersion)
	campaigner := b.newAgent(t, "Campaign agent")
	d, err := b.store.DeployAgent(context.Background(), b.workspace.ID, store.Deploy{AgentID: uuid.MustParse(campaigner), ChannelType: "sms", Config: json.RawMessage(`{}`)})
	require.NoError(t, err)
	b.newContact(t, `{"name":"Ann","phone":"`+ann+`","tags":["promo"],"consent_sms":true}`)
	b.newContact(t, `{"name":"Bob","phone":"`+bob+`","tags":["promo"],"consent_sms":true}`)
	b.newContact(t, `{"name":"Cat","phone":"+14155552673","tags":["promo"],"consent_sms":true}`)
	// Cat said STOP to this number before: the campaign skips her.
	require.NoError(t, b.store.SetOptOut(context.Background(), b.workspace.ID, lineNumber, "+14155552673", true))

	c := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns", `{"name":"Promo","agent_id":"`+campaigner+`","deployment_id":"`+d.ID.String()+
		`","first_message":"Fresh croissants today! Reply to order.","audience":{"tags":["promo"]}}`, 201))
	get := func() campaignView {
		return decode[campaignView](t, b.send(t, http.MethodGet, "/api/campaigns/"+c.ID, "", 200))
	}
	require.Eventually(t, func() bool { return get().Status == "completed" }, 20*time.Second, 20*time.Millisecond)
	got := get()
	require.Equal(t, 2, got.Counts.Sent)
	require.Equal(t, 1, got.Counts.Skipped)
	sends, err := b.store.CampaignSends(context.Background(), b.workspace.ID, uuid.MustParse(c.ID))
	require.NoError(t, err)
	var reasons []string
	for _, s := range sends {
		reasons = append(reasons, s.Status+":"+str(s.Reason))
	}
	require.Contains(t, reasons, "skipped:opted_out")

	promo := w.repliesTo(ann)
	require.Len(t, promo, 1)
	require.Equal(t, lineNumber, promo[0].From)
	require.NotEmpty(t, promo[0].StatusCallback, "a campaign sent from a channel asks for delivery reports")

	// Ann replies: the campaign's agent answers in the campaign's conversation, although
	// another agent holds the channel's inbound seat.
	w.text(t, ann, "Two please", "SM00000000000000000000000000000040")
	require.Equal(t, "reply to: Two please", w.waitReplies(t, ann, 2)[1].Body)
	var agentID uuid.UUID
	var first string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT c.agent_id, (SELECT content FROM messages WHERE conversation_id = c.id ORDER BY seq LIMIT 1)
		FROM conversations c JOIN conversation_threads t ON t.conversation_id = c.id WHERE t.remote = $1`, ann).Scan(&agentID, &first))
	require.Equal(t, campaigner, agentID.String())
	require.Equal(t, "Fresh croissants today! Reply to order.", first, "the outbound message is in the transcript")

	// Delivery reports, signed like inbound texts, move the campaign's counters once each.
	bobs := w.repliesTo(bob)
	require.Len(t, bobs, 1)
	for _, status := range []string{"sent", "delivered", "delivered"} {
		resp, body := w.post(t, "/status", smstest.StatusForm(promo[0].SID, status, lineNumber, ann), true)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
	}
	resp, _ := w.post(t, "/status", smstest.StatusForm(bobs[0].SID, "undelivered", lineNumber, bob), true)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = w.post(t, "/status", smstest.StatusForm(bobs[0].SID, "delivered", lineNumber, bob), false)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "an unsigned report changes nothing")
	got = get()
	require.Equal(t, 1, got.Counts.Delivered)
	require.Equal(t, 1, got.Counts.Undelivered)

	// The agent's own reply to Ann gets its delivery report too.
	reply := w.repliesTo(ann)[1]
	w.post(t, "/status", smstest.StatusForm(reply.SID, "delivered", lineNumber, ann), true)
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM channel_messages WHERE provider_message_id = $1 AND status = 'delivered'`, reply.SID))
}

func TestChannelsResource(t *testing.T) {
	t.Parallel()
	carrier := smstest.New(t)
	carrier.AddNumber(lineNumber)
	b := setup(t, func(o *setupOpts) { o.smsBaseURL = carrier.URL })

	for _, tc := range []struct{ body, param, code string }{
		{`{"provider":"sms","name":"No number"}`, "config.phone_number", "missing_parameter"},
		{`{"provider":"sms","name":"Bad","config":{"phone_number":"+1555"}}`, "config.phone_number", "invalid_value"},
		{`{"provider":"sms","name":"National","config":{"phone_number":"4155550100"}}`, "config.phone_number", "invalid_value"},
		{`{"provider":"sms","name":"Extra","config":{"phone_number":"` + lineNumber + `","colour":"red"}}`, "config.colour", "unknown_parameter"},
		{`{"provider":"sms","name":"Help","config":{"phone_number":"` + lineNumber + `","help_text":""}}`, "config.help_text", "invalid_value"},
		{`{"provider":"fax","name":"Fax"}`, "provider", "invalid_value"},
		{`{"provider":"sms","name":" "}`, "name", "invalid_value"},
	} {
		e := b.fail(t, http.MethodPost, "/api/channels", tc.body, 400)
		require.Equal(t, tc.param, str(e.Param), tc.body)
		require.Equal(t, tc.code, str(e.Code), tc.body)
	}
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM channels`), "a refusal writes nothing")

	// A number that is not on the carrier account needs setup, and says why.
	other := decode[channelView](t, b.send(t, http.MethodPost, "/api/channels", `{"provider":"sms","name":"Elsewhere","config":{"phone_number":"+14155550177"}}`, 201))
	require.Equal(t, "needs_setup", other.Status)
	require.Contains(t, *other.Setup, "not on this server's carrier account")
	carrier.AddNumber("+14155550177")
	other = decode[channelView](t, b.send(t, http.MethodPatch, "/api/channels/"+other.ID, `{}`, 200))
	require.Equal(t, "connected", other.Status, "a PATCH checks again")

	main := decode[channelView](t, b.send(t, http.MethodPost, "/api/channels", `{"provider":"sms","name":"Main","config":{"phone_number":"`+lineNumber+`"}}`, 201))
	e := b.fail(t, http.MethodPost, "/api/channels", `{"provider":"sms","name":"Again","config":{"phone_number":"`+lineNumber+`"}}`, 409)
	require.Equal(t, "number_taken", str(e.Code))

	// Credentials are sealed, and shown as a hint.
	app := decode[channelView](t, b.send(t, http.MethodPost, "/api/channels", `{"provider":"msgapp_1","name":"App","config":{"phone_number_id":"1234",`+
		`"access_token":"EAAG-very-secret-0000-wxyz","app_secret":"app-secret-000000000000","verify_token":"verify-token-0000000"}}`, 201))
	require.Equal(t, "…wxyz", app.Config["access_token"])
	require.Equal(t, "1234", app.Config["phone_number_id"])
	var stored []byte
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT config::text::bytea || coalesce(secrets, '') FROM channels WHERE id = $1`, app.ID).Scan(&stored))
	require.NotContains(t, string(stored), "very-secret", "never stored in the clear")
	app = decode[channelView](t, b.send(t, http.MethodPatch, "/api/channels/"+app.ID, `{"name":"App two","config":{"verify_token":"another-verify-token-9876"}}`, 200))
	require.Equal(t, "App two", app.Name)
	require.Equal(t, "…wxyz", app.Config["access_token"], "credentials left out are kept")
	require.Equal(t, "…9876", app.Config["verify_token"])
	// null removes a key.
	main = decode[channelView](t, b.send(t, http.MethodPatch, "/api/channels/"+main.ID, `{"config":{"help_text":"Bakery: text STOP to stop."}}`, 200))
	require.Equal(t, "Bakery: text STOP to stop.", main.Config["help_text"])
	main = decode[channelView](t, b.send(t, http.MethodPatch, "/api/channels/"+main.ID, `{"config":{"help_text":null}}`, 200))
	require.NotContains(t, main.Config, "help_text")

	list := decode[struct{ Data []channelView }](t, b.send(t, http.MethodGet, "/api/channels?provider=sms", "", 200))
	require.Len(t, list.Data, 2)

	// Another workspace sees none of it.
	theirs := b.newKey(t, mustWorkspace(t, b, "globex"), "owner")
	resp, _ := b.do(t, http.MethodGet, "/api/channels/"+main.ID, "Bearer "+theirs, "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, raw := b.do(t, http.MethodGet, "/api/channels", "Bearer "+theirs, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, string(raw), main.ID)
	resp, _ = b.do(t, http.MethodPost, "/api/channels", "Bearer "+theirs, `{"provider":"sms","name":"Mine now","config":{"phone_number":"`+lineNumber+`"}}`)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "a number connected in one workspace cannot be taken by another")

	// Members read channels; connecting and deleting need the channels permission (admin).
	member := b.newKey(t, b.workspace, "member")
	resp, _ = b.do(t, http.MethodGet, "/api/channels", "Bearer "+member, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _ = b.do(t, http.MethodDelete, "/api/channels/"+main.ID, "Bearer "+member, "")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	// Deleting removes the channel's deployments.
	agent := b.newAgent(t, "On main")
	s := b.mcp(t, b.url, b.key)
	s.ok("deploy_agent", map[string]any{"agent_id": agent, "channel_id": main.ID})
	b.send(t, http.MethodDelete, "/api/channels/"+main.ID, "", 200)
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM deployments WHERE channel_id = $1`, main.ID))
	b.fail(t, http.MethodGet, "/api/channels/"+main.ID, "", 404)
}

func TestDeployAgentNeverClaimsTrafficThatCannotArrive(t *testing.T) {
	t.Parallel()
	b := setup(t) // no carrier: an SMS channel needs setup
	s := b.mcp(t, b.url, b.key)
	agent := b.newAgent(t, "Hopeful")
	ch := decode[channelView](t, b.send(t, http.MethodPost, "/api/channels", `{"provider":"sms","name":"Main","config":{"phone_number":"`+lineNumber+`"}}`, 201))
	require.Equal(t, "needs_setup", ch.Status)
	require.Contains(t, *ch.Setup, "TWILIO_ACCOUNT_SID")

	for _, args := range []map[string]any{
		{"agent_id": agent, "channel_id": ch.ID},
		{"agent_id": agent, "channel": "sms"},
		{"agent_id": agent, "channel": "telco_voice"},
		{"agent_id": agent, "channel": "msgapp_2"},
	} {
		e := s.fails("deploy_agent", args, "channel_not_connected")
		require.Contains(t, e["hint"], "/api/channels", args)
	}
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM deployments`))
	s.ok("deploy_agent", map[string]any{"agent_id": agent, "channel": "webchat"}) // webchat needs no channel row
	got := s.ok("get_agent", map[string]any{"agent_id": agent})["agent"].(map[string]any)
	require.Equal(t, []any{}, got["inboundChannels"], "no traffic described")
}

// TestSMSReplyJobRerunSendsTheDecidedReplyOnce: a reply job run again (its replica died)
// sends the reply decided with the answer, and only if it was not handed to the carrier yet.
func TestSMSReplyJobRerunSendsTheDecidedReplyOnce(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t)
	b := w.b
	ctx := context.Background()
	const sid = "SM00000000000000000000000000000050"
	w.text(t, ann, "First question", sid)
	w.waitReplies(t, ann, 1)
	var msgID uuid.UUID
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT id FROM channel_messages WHERE provider_message_id = $1`, sid).Scan(&msgID))
	rerun := func() {
		_, err := b.store.Pool().Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at)
			VALUES ($1, 'channel_reply', 3, 'channels', 'available', now())`, `{"workspace_id":"`+b.workspace.ID.String()+`","message_id":"`+msgID.String()+`"}`)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			return b.countWhere(t, `SELECT count(*) FROM river_job WHERE kind = 'channel_reply' AND state <> 'completed'`) == 0
		}, 10*time.Second, 10*time.Millisecond)
	}
	rerun()
	require.Len(t, w.repliesTo(ann), 1, "handed to the carrier already: not sent again")

	// A reply decided but not handed over when the process died goes out, with its own text
	// (not whatever the conversation said last).
	w.text(t, ann, "Second question", "SM00000000000000000000000000000051")
	w.waitReplies(t, ann, 2)
	_, err := b.store.Pool().Exec(ctx, `UPDATE channel_messages SET status = 'pending', provider_message_id = NULL WHERE reply_to = $1`, msgID)
	require.NoError(t, err)
	rerun()
	replies := w.repliesTo(ann)
	require.Len(t, replies, 3)
	require.Equal(t, "reply to: First question", replies[2].Body)
	require.Len(t, b.vendors[catalog.Beta].Requests(), 2, "a rerun never asks the model again")
}

// rerunReply queues the reply job of an inbound message again, as the surviving replica does
// with the jobs of one that died, and returns the job's id.
func (w *smsWorld) rerunReply(t *testing.T, msgID uuid.UUID) int64 {
	t.Helper()
	var id int64
	require.NoError(t, w.b.store.Pool().QueryRow(context.Background(), `INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at)
		VALUES ($1, 'channel_reply', 3, 'channels', 'available', now()) RETURNING id`,
		`{"workspace_id":"`+w.b.workspace.ID.String()+`","message_id":"`+msgID.String()+`"}`).Scan(&id))
	return id
}

// jobState waits until the job is in one of states and returns it.
func (w *smsWorld) jobState(t *testing.T, id int64, states ...string) string {
	t.Helper()
	var state string
	require.Eventually(t, func() bool {
		require.NoError(t, w.b.store.Pool().QueryRow(context.Background(), `SELECT state FROM river_job WHERE id = $1`, id).Scan(&state))
		for _, s := range states {
			if state == s {
				return true
			}
		}
		return false
	}, 20*time.Second, 10*time.Millisecond, "job %d is %s, not %v", id, state, states)
	return state
}

func (w *smsWorld) inboundID(t *testing.T, sid string) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, w.b.store.Pool().QueryRow(context.Background(), `SELECT id FROM channel_messages WHERE provider_message_id = $1 AND direction = 'inbound'`, sid).Scan(&id))
	return id
}

// The turn, the message's answered state, its pending reply and its inbound charge are one
// transaction: a replica killed after the turn was stored can no longer leave the message
// `answering` with its answer stored, which made the rescued job ask the model again and
// store a second answer. A rescued job finds the answer and sends it, without the model.
func TestSMSTurnIsStoredWithItsAnswerSoARescuedJobNeverAsksTheModelAgain(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t)
	b := w.b
	ctx := context.Background()
	const sid = "SM00000000000000000000000000000060"
	w.text(t, ann, "Is the shop open?", sid)
	w.waitReplies(t, ann, 1)
	msgID := w.inboundID(t, sid)

	var inbound, answer, charge, reply string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT m.xmin::text, a.xmin::text, l.xmin::text, r.xmin::text
		FROM channel_messages m
		JOIN messages a ON a.conversation_id = m.conversation_id AND a.role = 'assistant'
		JOIN ledger l ON l.conversation_id = m.conversation_id AND l.category = 'sms'
		JOIN channel_messages r ON r.reply_to = m.id
		WHERE m.id = $1 ORDER BY l.created_at LIMIT 1`, msgID).Scan(&inbound, &answer, &charge, &reply))
	require.Equal(t, answer, inbound, "the message is marked answered by the transaction that stores the turn")
	require.Equal(t, answer, charge, "its inbound charge is settled with the turn's")
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM ledger WHERE workspace_id = $1 AND category = 'sms'
		AND xmin::text = $2`, b.workspace.ID, answer), "one inbound SMS charge in the turn's transaction")

	// Killed after that commit, before the carrier call: the reply is pending. The rescued
	// job sends exactly that reply and asks the model nothing.
	_, err := b.store.Pool().Exec(ctx, `UPDATE channel_messages SET status = 'pending', provider_message_id = NULL WHERE reply_to = $1`, msgID)
	require.NoError(t, err)
	w.jobState(t, w.rerunReply(t, msgID), "completed")
	replies := w.repliesTo(ann)
	require.Len(t, replies, 2)
	require.Equal(t, replies[0].Body, replies[1].Body)
	require.Len(t, b.vendors[catalog.Beta].Requests(), 1, "the model answered once")
	require.Equal(t, 2, b.countWhere(t, `SELECT count(*) FROM messages m JOIN channel_messages c ON c.conversation_id = m.conversation_id
		WHERE c.id = $1`, msgID), "the question and its answer, once")

	// Killed during the model call: nothing of the turn is stored and the message is
	// `answering`. The rescued job runs the turn, once.
	const sid2 = "SM00000000000000000000000000000061"
	w.text(t, bob, "And on Sunday?", sid2)
	w.waitReplies(t, bob, 1)
	msg2 := w.inboundID(t, sid2)
	_, err = b.store.Pool().Exec(ctx, `WITH m AS (SELECT conversation_id FROM channel_messages WHERE id = $1)
		DELETE FROM messages WHERE conversation_id = (SELECT conversation_id FROM m)`, msg2)
	require.NoError(t, err)
	_, err = b.store.Pool().Exec(ctx, `DELETE FROM channel_messages WHERE reply_to = $1`, msg2)
	require.NoError(t, err)
	_, err = b.store.Pool().Exec(ctx, `UPDATE channel_messages SET status = 'answering', reason = NULL WHERE id = $1`, msg2)
	require.NoError(t, err)
	w.jobState(t, w.rerunReply(t, msg2), "completed")
	require.Len(t, w.waitReplies(t, bob, 2), 2)
	require.Len(t, b.vendors[catalog.Beta].Requests(), 3, "the turn that was never stored ran again, once")
	require.Equal(t, "answered", w.settled(t, sid2))
}

// A replica killed between handing a reply to the carrier and recording the carrier's
// answer leaves it `sending`. The rescued job asks the carrier (its message list): a reply
// the carrier has is recorded with the carrier's id and charged, not sent again; one it never
// got is sent, once. A claim younger than the send's bound may still be in a live run's
// hands: the job waits (snoozes) before it asks. A late finish of the first run never
// overwrites the state recorded since.
func TestSMSReplyLeftSendingByAKillIsResolvedWithTheCarrier(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t)
	b := w.b
	ctx := context.Background()
	outboundCharges := func() int {
		return b.countWhere(t, `SELECT count(*) FROM events WHERE workspace_id = $1 AND type = 'spend.recorded'
			AND envelope::jsonb #>> '{data,category}' = 'sms' AND envelope::jsonb #>> '{data,direction}' = 'outbound'`, b.workspace.ID)
	}
	leftSending := func(msgID uuid.UUID, age string, body string) {
		t.Helper()
		_, err := b.store.Pool().Exec(ctx, `UPDATE channel_messages SET status = 'sending', provider_message_id = NULL,
			body = coalesce(nullif($3, ''), body), updated_at = now() - $2::interval WHERE reply_to = $1`, msgID, age, body)
		require.NoError(t, err)
	}
	replyRow := func(msgID uuid.UUID) (status, providerID string) {
		t.Helper()
		require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT status, coalesce(provider_message_id, '') FROM channel_messages WHERE reply_to = $1`,
			msgID).Scan(&status, &providerID))
		return status, providerID
	}

	// The carrier has it: its id is recorded, the reply charged once, nothing sent again.
	const sid = "SM00000000000000000000000000000070"
	w.text(t, ann, "Where is my order?", sid)
	sent := w.waitReplies(t, ann, 1)[0]
	msgID := w.inboundID(t, sid)
	require.Eventually(t, func() bool { st, _ := replyRow(msgID); return st == "queued" }, 10*time.Second, 10*time.Millisecond)
	charges := outboundCharges()
	leftSending(msgID, "0 s", "")
	job := w.rerunReply(t, msgID)
	require.Equal(t, "scheduled", w.jobState(t, job, "scheduled", "completed"), "a fresh claim may be a live send: the job waits")
	require.Len(t, w.repliesTo(ann), 1)
	_, err := b.store.Pool().Exec(ctx, `UPDATE channel_messages SET updated_at = now() - interval '1 minute' WHERE reply_to = $1`, msgID)
	require.NoError(t, err)
	_, err = b.store.Pool().Exec(ctx, `UPDATE river_job SET scheduled_at = now() WHERE id = $1`, job)
	require.NoError(t, err)
	w.jobState(t, job, "completed")
	status, providerID := replyRow(msgID)
	require.Equal(t, "queued", status)
	require.Equal(t, sent.SID, providerID, "the carrier's message is the reply's")
	require.Len(t, w.repliesTo(ann), 1, "not sent twice")
	require.Equal(t, charges+1, outboundCharges(), "charged as the send would have been")

	// A late finish of the killed run's send (it was only slow) finds the state moved on and
	// writes nothing.
	_, moved, err := b.store.FinishOutbound(ctx, b.workspace.ID, replyID(t, b, msgID), "sending", "failed", nil, nil)
	require.NoError(t, err)
	require.False(t, moved)
	status, _ = replyRow(msgID)
	require.Equal(t, "queued", status)

	// The carrier never got it: it is sent now, once, and charged once.
	const sid2 = "SM00000000000000000000000000000071"
	w.text(t, bob, "Can I change the address?", sid2)
	w.waitReplies(t, bob, 1)
	msg2 := w.inboundID(t, sid2)
	require.Eventually(t, func() bool { st, _ := replyRow(msg2); return st == "queued" }, 10*time.Second, 10*time.Millisecond)
	charges = outboundCharges()
	leftSending(msg2, "1 minute", "The reply the carrier never got.")
	w.jobState(t, w.rerunReply(t, msg2), "completed")
	replies := w.waitReplies(t, bob, 2)
	require.Equal(t, "The reply the carrier never got.", replies[1].Body)
	status, providerID = replyRow(msg2)
	require.Equal(t, "queued", status)
	require.Equal(t, replies[1].SID, providerID)
	require.Equal(t, charges+1, outboundCharges())
	w.jobState(t, w.rerunReply(t, msg2), "completed")
	require.Len(t, w.repliesTo(bob), 2, "resolved: a further rerun sends nothing")
}

func replyID(t *testing.T, b *testBundle, inbound uuid.UUID) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT id FROM channel_messages WHERE reply_to = $1`, inbound).Scan(&id))
	return id
}

// TestSMSLeftInTheInboxByADeadReplicaIsSweptAndAnsweredOnce: a message stored and
// acknowledged whose replica died before it inserted the reply job (its inbox row written,
// as RecordInboundQueued does, but never handed to a live RunInbox) is taken by the sweep
// after inboxStaleAfter, answered once, and leaves the inbox; a webhook's own messages leave
// it too.
func TestSMSLeftInTheInboxByADeadReplicaIsSweptAndAnsweredOnce(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t)
	b := w.b
	ctx := context.Background()
	w.text(t, ann, "Live replica?", "SM00000000000000000000000000000090")
	w.waitReplies(t, ann, 1)

	chID, err := uuid.Parse(w.channel.ID)
	require.NoError(t, err)
	id, fresh, err := b.store.RecordInboundQueued(ctx, b.workspace.ID, store.InboundMessage{ChannelID: chID,
		ProviderMessageID: "SM00000000000000000000000000000091", Remote: ann, Local: lineNumber, Body: "Anyone there?", Segments: 1})
	require.NoError(t, err)
	require.True(t, fresh)
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM channel_inbox WHERE message_id = $1`, id), "queued, no job yet")
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM river_job WHERE args->>'message_id' = $1`, id.String()))

	w.waitReplies(t, ann, 2)
	require.Eventually(t, func() bool { return w.settled(t, "SM00000000000000000000000000000091") == "answered" }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM river_job WHERE args->>'message_id' = $1`, id.String()), "one job")
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM channel_inbox`), "the inbox is empty")
	time.Sleep(1500 * time.Millisecond) // a sweep more: room for a wrong second job
	require.Len(t, w.repliesTo(ann), 2)
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM river_job WHERE args->>'message_id' = $1`, id.String()))
}
