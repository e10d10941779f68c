package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/compliance"
	"switchboard/msgapps/msgappstest"
)

// People of the WhatsApp campaign test, by wa_id (their number without the +).
const (
	waBob  = "14155550301"
	waCarl = "14155550302"
	waEve  = "14155550303"
	waNoOk = "14155550304"
)

// whatsAppTo is the Graph API sends to one person.
func (w *appWorld) whatsAppTo(t *testing.T, waID string) []msgappstest.Request {
	t.Helper()
	var out []msgappstest.Request
	for _, r := range w.sends("/messages") {
		if r.JSON(t)["to"] == waID {
			out = append(out, r)
		}
	}
	return out
}

// TestMsgApp1WhatsAppCampaignSendsTheApprovedTemplate: a campaign on a WhatsApp deployment
// names its approved template (400 naming template without one); each contact outside the
// 24-hour window gets the Cloud API's template message with the parameters filled in from
// the contact, one who wrote within it gets first_message as text; STOP and consent skip, as
// on SMS; each message is metered at the app's price, and the app's delivery status counts.
func TestMsgApp1WhatsAppCampaignSendsTheApprovedTemplate(t *testing.T) {
	t.Parallel()
	w := newAppWorld(t, "msgapp_1", `{"phone_number_id":"`+waPhoneNumberID+`","access_token":"`+waToken+`","app_secret":"`+waSecret+`","verify_token":"`+waVerify+`"}`,
		func(o *setupOpts) { o.campaignPeriod = 300 * time.Millisecond })
	b := w.b
	ctx := context.Background()
	b.accept(t, compliance.DefaultVersion)
	var deploymentID string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT id::text FROM deployments WHERE channel_id = $1`, w.channel.ID).Scan(&deploymentID))

	for _, c := range []string{
		`{"name":"Ann Lee","phone":"+` + waAnn + `","tags":["promo"],"consent_sms":true}`,
		`{"name":"Bob Stone","phone":"+` + waBob + `","tags":["promo"],"consent_sms":true}`,
		`{"name":"Carl","phone":"+` + waCarl + `","tags":["promo"],"consent_sms":true}`,
		`{"phone":"+` + waEve + `","tags":["promo"],"consent_sms":true}`,
		`{"name":"No consent","phone":"+` + waNoOk + `","tags":["promo"]}`,
	} {
		b.newContact(t, c)
	}
	// Ann has just written (her window is open); Carl sent STOP to the number.
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppMessage(waPhoneNumberID, waAnn, "Ann Lee", "wamid.C1", "text", "Any offers?"), waSecret))
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppMessage(waPhoneNumberID, waCarl, "Carl", "wamid.C2", "text", "STOP"), waSecret))
	require.Equal(t, "answered", w.settled(t, "wamid.C1"))
	require.Equal(t, "answered", w.settled(t, "wamid.C2"))
	w.waitSends(t, "/messages", 2)

	body := func(extra string) string {
		return `{"name":"Spring","agent_id":"` + w.agentID + `","deployment_id":"` + deploymentID +
			`","first_message":"Hi! Our **spring sale** starts today: 20% off.","audience":{"tags":["promo"]},"schedule":{"rate_per_minute":20}` + extra + `}`
	}
	// A WhatsApp campaign without its template: 400 naming it, as a draft too, and nothing
	// written.
	e := b.fail(t, http.MethodPost, "/api/campaigns", body(""), 400)
	require.Equal(t, "template", *e.Param)
	require.Contains(t, e.Message, "24-hour window")
	e = b.fail(t, http.MethodPost, "/api/campaigns", body(`,"draft":true`), 400)
	require.Equal(t, "template", *e.Param)
	e = b.fail(t, http.MethodPost, "/api/campaigns", body(`,"template":{"name":"spring_sale","language":"en_US","parameters":["{{contact.email}}"]}`), 400)
	require.Equal(t, "template.parameters[0]", *e.Param)
	e = b.fail(t, http.MethodPost, "/api/campaigns", body(`,"template":{"name":"Spring Sale","language":"en_US"}`), 400)
	require.Contains(t, *e.Param, "template")
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM campaigns WHERE workspace_id = $1`, b.workspace.ID))

	// A draft, then its template removed: refused while it is on WhatsApp.
	draft := decode[map[string]any](t, b.send(t, http.MethodPost, "/api/campaigns",
		body(`,"draft":true,"template":{"name":"spring_sale","language":"en_US","parameters":["x"]}`), 201))
	require.Equal(t, map[string]any{"name": "spring_sale", "language": "en_US", "parameters": []any{"x"}}, draft["template"])
	e = b.fail(t, http.MethodPatch, "/api/campaigns/"+draft["id"].(string), `{"template":null}`, 400)
	require.Equal(t, "template", *e.Param)
	b.send(t, http.MethodPost, "/api/campaigns/"+draft["id"].(string)+"/cancel", "", 200)

	c := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns",
		body(`,"template":{"name":"spring_sale","language":"en_US","parameters":["{{contact.first_name|there}}","20%"]}`), 201))
	require.Eventually(t, func() bool {
		return decode[campaignView](t, b.send(t, http.MethodGet, "/api/campaigns/"+c.ID, "", 200)).Status == "completed"
	}, 60*time.Second, 50*time.Millisecond)
	final := decode[campaignView](t, b.send(t, http.MethodGet, "/api/campaigns/"+c.ID, "", 200))
	require.Equal(t, [3]int{3, 0, 2}, [3]int{final.Counts.Sent, final.Counts.Failed, final.Counts.Skipped}, "sent, failed, skipped")
	skipped := map[string]string{}
	rows, err := b.store.Pool().Query(ctx, `SELECT ct.phone, s.reason FROM campaign_sends s JOIN contacts ct ON ct.id = s.contact_id
		WHERE s.campaign_id = $1 AND s.status = 'skipped'`, c.ID)
	require.NoError(t, err)
	for rows.Next() {
		var phone, reason string
		require.NoError(t, rows.Scan(&phone, &reason))
		skipped[phone] = reason
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]string{"+" + waCarl: "opted_out", "+" + waNoOk: "no_consent"}, skipped)

	// Outside the window: the Cloud API's template message, parameters from the contact.
	bob := w.whatsAppTo(t, waBob)
	require.Len(t, bob, 1)
	require.Equal(t, "/"+waPhoneNumberID+"/messages", bob[0].Path)
	require.Equal(t, "Bearer "+waToken, bob[0].Header.Get("Authorization"))
	require.JSONEq(t, `{"messaging_product":"whatsapp","recipient_type":"individual","to":"`+waBob+`","type":"template",
		"template":{"name":"spring_sale","language":{"code":"en_US"},"components":[{"type":"body","parameters":[
			{"type":"text","text":"Bob"},{"type":"text","text":"20%"}]}]}}`, string(bob[0].Body))
	eve := w.whatsAppTo(t, waEve)
	require.Len(t, eve, 1)
	require.Equal(t, "there", eve[0].JSON(t)["template"].(map[string]any)["components"].([]any)[0].(map[string]any)["parameters"].([]any)[0].(map[string]any)["text"], "the fallback of a contact without a name")
	// Within the window: first_message as a text, in WhatsApp's formatting.
	ann := w.whatsAppTo(t, waAnn)
	require.Len(t, ann, 2, "the agent's reply, then the campaign")
	require.JSONEq(t, `{"messaging_product":"whatsapp","recipient_type":"individual","to":"`+waAnn+`","type":"text",
		"text":{"preview_url":false,"body":"Hi! Our *spring sale* starts today: 20% off."}}`, string(ann[1].Body))
	require.Len(t, w.whatsAppTo(t, waCarl), 1, "only the STOP confirmation")
	require.Empty(t, w.whatsAppTo(t, waNoOk))

	// Metered at the app's price, as the app's other messages.
	var spent []storedEvent
	for _, e := range b.events(t, "spend.recorded") {
		if e.Data["campaign_id"] == c.ID {
			spent = append(spent, e)
		}
	}
	require.Len(t, spent, 3)
	templates := 0
	for _, e := range spent {
		require.Equal(t, "message", e.Data["category"])
		require.Equal(t, "msgapp_1", e.Data["app"])
		require.InDelta(t, 0.005, e.Data["amount_usd"], 1e-9)
		if e.Data["template"] == true {
			templates++
		}
	}
	require.Equal(t, 2, templates)

	// The app's delivery status counts on the campaign; Bob's answer reaches the campaign's
	// conversation, with its agent.
	var wamid string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT s.provider_message_id FROM campaign_sends s JOIN contacts ct ON ct.id = s.contact_id
		WHERE s.campaign_id = $1 AND ct.phone = $2`, c.ID, "+"+waBob).Scan(&wamid))
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppStatus(waPhoneNumberID, wamid, waBob, "delivered"), waSecret))
	require.Eventually(t, func() bool {
		return decode[campaignView](t, b.send(t, http.MethodGet, "/api/campaigns/"+c.ID, "", 200)).Counts.Delivered == 1
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusOK, w.meta(t, msgappstest.WhatsAppMessage(waPhoneNumberID, waBob, "Bob Stone", "wamid.C3", "text", "Sounds good"), waSecret))
	require.Equal(t, "answered", w.settled(t, "wamid.C3"))
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM channel_messages m JOIN campaign_sends s ON s.conversation_id = m.conversation_id
		WHERE m.provider_message_id = 'wamid.C3' AND s.campaign_id = $1`, c.ID), "the reply continues the campaign's conversation")
	require.Eventually(t, func() bool { return len(w.whatsAppTo(t, waBob)) == 2 }, 20*time.Second, 10*time.Millisecond,
		"and is answered in the window it opened")
}
