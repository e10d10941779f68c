package server_test

import (
	"context"
	"encoding/xml"
	"fmt"
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
	"switchboard/manage"
	"switchboard/sms/smstest"
	"switchboard/store"
)

// The person a voice agent transfers calls to.
const transferTo = "+14155550199"

// phoneAgentYAML is a voice agent whose escalation transfers a caller who asks for a person.
const phoneAgentYAML = `agent:
  name: %s
  language: en-US
  persona:
    display_name: Helper
    tone: professional
    greeting: Thanks for calling Acme, how can I help?
  llm:
    provider: beta
    model: beta-5.4-mini
    temperature: 0.5
    max_tokens: 256
    system_prompt: You help customers with their orders.
  channels:
    - type: telco_voice
  business_rules:
%s    escalation:
      enabled: true
      trigger: user_request
      action: transfer_to_human
      transfer_number: "` + transferTo + `"
`

// voiceWorld is a server whose carrier is faked at the wire, with a telco_voice channel on
// the carrier's number and a voice agent holding its inbound seat.
type voiceWorld struct {
	b       *testBundle
	carrier *smstest.Server
	channel channelView
	agentID string
}

func newVoiceWorld(t *testing.T, hours string, opts ...func(*setupOpts)) *voiceWorld {
	t.Helper()
	carrier := smstest.New(t)
	carrier.AddNumber(lineNumber)
	b := setup(t, append([]func(*setupOpts){func(o *setupOpts) { o.smsBaseURL = carrier.URL }}, opts...)...)
	w := &voiceWorld{b: b, carrier: carrier}
	w.channel = decode[channelView](t, b.send(t, http.MethodPost, "/api/channels", `{"provider":"telco_voice","name":"Phone line","config":{"phone_number":"(415) 555-0100","region":"us"}}`, 201))
	require.Equal(t, "connected", w.channel.Status, w.channel.Setup)
	resp, raw := b.doYAML(t, "Bearer "+b.key, fmt.Sprintf(phoneAgentYAML, "Phone agent", hours))
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	w.agentID = decode[struct {
		AgentID string `json:"agentId"`
	}](t, raw).AgentID
	res := b.mcp(t, b.url, b.key).ok("deploy_agent", map[string]any{"agent_id": w.agentID, "channel_id": w.channel.ID})
	require.Equal(t, true, res["inbound"])
	return w
}

// verb is a TwiML verb as the carrier reads it.
type verb struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Inner   []verb     `xml:",any"`
}

func (v verb) attr(name string) string {
	for _, a := range v.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// twimlVerbs parses a TwiML answer as XML and returns its verbs.
func twimlVerbs(t *testing.T, body string) []verb {
	t.Helper()
	var doc struct {
		XMLName xml.Name `xml:"Response"`
		Verbs   []verb   `xml:",any"`
	}
	require.NoError(t, xml.Unmarshal([]byte(body), &doc), body)
	return doc.Verbs
}

func names(vs []verb) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.XMLName.Local)
	}
	return out
}

// post posts a signed carrier webhook to the channel's route (a sub-path with its query,
// or "") and returns the TwiML verbs of the answer.
func (w *voiceWorld) post(t *testing.T, route string, form url.Values) []verb {
	t.Helper()
	status, body := w.postRaw(t, route, form, true)
	require.Equal(t, http.StatusOK, status, body)
	return twimlVerbs(t, body)
}

func (w *voiceWorld) postRaw(t *testing.T, route string, form url.Values, signed bool) (int, string) {
	t.Helper()
	full := *w.channel.InboundURL
	if route != "" {
		full += "/" + route
	}
	u, err := url.Parse(full)
	require.NoError(t, err)
	target := w.b.url + u.Path
	if u.RawQuery != "" {
		target += "?" + u.RawQuery
	}
	sig := ""
	if signed {
		sig = w.carrier.Sign(full, form)
	}
	resp, err := smstest.PostWithSignature(context.Background(), http.DefaultClient, target, form, sig)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		require.Contains(t, resp.Header.Get("Content-Type"), "text/xml")
	}
	return resp.StatusCode, string(raw)
}

// route is a URL the flow gave the carrier, relative to the channel's inbound URL.
func (w *voiceWorld) route(t *testing.T, full string) string {
	t.Helper()
	prefix := *w.channel.InboundURL + "/"
	require.True(t, strings.HasPrefix(full, prefix), "%s is under the channel's inbound URL", full)
	return strings.TrimPrefix(full, prefix)
}

func (w *voiceWorld) call(t *testing.T, sid string) store.VoiceCall {
	t.Helper()
	c, err := w.b.store.VoiceCallBySID(context.Background(), w.b.workspace.ID, uuid.MustParse(w.channel.ID), sid)
	require.NoError(t, err)
	return c
}

func voiceSpend(t *testing.T, b *testBundle) []storedEvent {
	var out []storedEvent
	for _, e := range b.events(t, "spend.recorded") {
		if e.Data["category"] == "voice" {
			out = append(out, e)
		}
	}
	return out
}

func TestVoiceCallGreetsDisclosesAnswersTransfersAndTakesAMessage(t *testing.T) {
	t.Parallel()
	w := newVoiceWorld(t, "")
	b := w.b
	require.Equal(t, lineNumber, *w.channel.Address)
	require.Equal(t, *w.channel.InboundURL, w.carrier.NumberVoiceURL(lineNumber), "the number's voice webhook points at the channel")
	require.Equal(t, *w.channel.InboundURL+"/status", w.carrier.NumberStatusCallback(lineNumber))

	const sid = "CA00000000000000000000000000000001"
	// The call comes in: greeting, the platform's default disclosure (no text of its own),
	// then listening, all in the agent's language.
	vs := w.post(t, "", smstest.CallForm(sid, ann, lineNumber, "ringing"))
	require.Equal(t, []string{"Say", "Say", "Gather"}, names(vs))
	require.Equal(t, "Thanks for calling Acme, how can I help?", vs[0].Text)
	require.Equal(t, "en-US", vs[0].attr("language"))
	require.Equal(t, "Polly.Joanna-Neural", vs[0].attr("voice"))
	require.Equal(t, manage.DefaultDisclosureText, vs[1].Text)
	require.Equal(t, "speech", vs[2].attr("input"))
	require.Equal(t, "en-US", vs[2].attr("language"))
	require.Equal(t, "gather?turn=1", w.route(t, vs[2].attr("action")))
	// A retried webhook gets the same opening and no second conversation.
	require.Equal(t, names(vs), names(w.post(t, "", smstest.CallForm(sid, ann, lineNumber, "ringing"))))

	// Three spoken turns through the agent's runtime: the model is told it is on a call, and
	// its Markdown and URLs are not read out.
	b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "We open at **nine**, see https://www.acme.test/hours for more."})
	next := vs[2].attr("action")
	for i, said := range []string{"When do you open?", "Do you deliver on Sundays?", "What about returns?"} {
		vs = w.post(t, w.route(t, next), smstest.GatherForm(sid, ann, lineNumber, said))
		require.Equal(t, []string{"Say", "Gather"}, names(vs), "turn %d", i+1)
		if i == 0 {
			require.Equal(t, "We open at nine, see acme.test for more.", vs[0].Text)
		} else {
			require.Equal(t, "reply to: "+said, vs[0].Text)
		}
		next = vs[1].attr("action")
		require.Equal(t, fmt.Sprintf("gather?turn=%d", i+2), w.route(t, next))
	}
	reqs := b.vendors[catalog.Beta].Requests()
	require.Len(t, reqs, 3)
	require.Contains(t, reqs[0].System, "You are on a phone call")
	// The same turn posted again (a carrier retry) is answered from what was stored.
	vs = w.post(t, "gather?turn=3", smstest.GatherForm(sid, ann, lineNumber, "What about returns?"))
	require.Equal(t, "reply to: What about returns?", vs[0].Text)
	require.Len(t, b.vendors[catalog.Beta].Requests(), 3, "a retried turn does not call the model again")

	// Asking for a person transfers the call to the blueprint's number, with a whisper.
	vs = w.post(t, w.route(t, next), smstest.GatherForm(sid, ann, lineNumber, "Can I talk to a human please"))
	require.Equal(t, []string{"Say", "Dial"}, names(vs))
	require.Equal(t, "dial?turn=4", w.route(t, vs[1].attr("action")))
	require.Len(t, vs[1].Inner, 1)
	number := vs[1].Inner[0]
	require.Equal(t, "Number", number.XMLName.Local)
	require.Equal(t, transferTo, strings.TrimSpace(number.Text))
	whisper := w.post(t, w.route(t, number.attr("url")), smstest.CallForm(sid, ann, lineNumber, "in-progress"))
	require.Equal(t, []string{"Say"}, names(whisper))
	require.Contains(t, whisper[0].Text, "4 1 5 5 5 5 2 6 7 1")
	require.Contains(t, whisper[0].Text, "Can I talk to a human please.")

	// Nobody answers: the caller is told and may leave a message.
	vs = w.post(t, "dial?turn=4", smstest.DialForm(sid, ann, lineNumber, "no-answer", 0))
	require.Equal(t, []string{"Say", "Record", "Say", "Hangup"}, names(vs))
	require.Equal(t, "120", vs[1].attr("maxLength"))
	vs = w.post(t, w.route(t, vs[1].attr("action")), smstest.RecordForm(sid, ann, lineNumber, 12))
	require.Equal(t, []string{"Say", "Hangup"}, names(vs))

	// The call ends after 2 minutes 5 seconds: three started minutes, metered once.
	done := smstest.CallStatusForm(sid, ann, lineNumber, "completed", 125)
	require.Empty(t, w.post(t, "status", done))
	require.Empty(t, w.post(t, "status", done), "a repeated status callback changes nothing")
	spend := voiceSpend(t, b)
	require.Len(t, spend, 1)
	require.Equal(t, 3.0, spend[0].Data["minutes"])
	require.Equal(t, "0.06", fmt.Sprint(spend[0].Data["amount_usd"]))
	require.NotEmpty(t, spend[0].Data["conversation_id"])

	call := w.call(t, sid)
	require.NotNil(t, call.ConversationID)
	require.Equal(t, 125, *call.DurationS)
	require.Equal(t, "voicemail", *call.Outcome)
	require.NotNil(t, call.VoicemailURL)
	var status, channel string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT status, channel FROM conversations WHERE id = $1`, *call.ConversationID).Scan(&status, &channel))
	require.Equal(t, "closed", status)
	require.Equal(t, "telco_voice", channel)
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM voice_calls WHERE workspace_id = $1`, b.workspace.ID))

	lines, err := b.store.Transcript(context.Background(), b.workspace.ID, *call.ConversationID)
	require.NoError(t, err)
	var said []string
	for _, l := range lines {
		said = append(said, l.Role+": "+l.Content)
	}
	require.Equal(t, "assistant: Thanks for calling Acme, how can I help?", said[0])
	require.Equal(t, "assistant: "+manage.DefaultDisclosureText, said[1], "the disclosure given is in the transcript")
	require.Equal(t, "user: When do you open?", said[2])
	require.Contains(t, said[len(said)-1], "Voicemail (12 s): https://api.twilio.com/")
}

func TestVoiceDisclosurePlaysTheRecordingOrSaysTheAgentsText(t *testing.T) {
	t.Parallel()
	w := newVoiceWorld(t, "")
	b := w.b
	ctx := context.Background()
	rec, err := b.store.InsertRecording(ctx, b.workspace.ID, store.NewRecording{Kind: "disclosure", Name: "AI notice", Format: "wav",
		DurationMS: 1200, Audio: []byte("RIFF")})
	require.NoError(t, err)
	s := b.mcp(t, b.url, b.key)
	s.ok("update_agent", map[string]any{"agent_id": w.agentID, "updates": map[string]any{"disclosureRecordingId": rec.ID.String()}})
	vs := w.post(t, "", smstest.CallForm("CA00000000000000000000000000000011", ann, lineNumber, "ringing"))
	require.Equal(t, []string{"Say", "Play", "Gather"}, names(vs))
	require.Equal(t, "http://switchboard.test/media/recordings/"+rec.MediaToken+".wav", vs[1].Text)

	s.ok("update_agent", map[string]any{"agent_id": w.agentID, "updates": map[string]any{"disclosureRecordingId": nil,
		"disclosureText": "You are talking to Acme's AI assistant."}})
	vs = w.post(t, "", smstest.CallForm("CA00000000000000000000000000000012", ann, lineNumber, "ringing"))
	require.Equal(t, []string{"Say", "Say", "Gather"}, names(vs))
	require.Equal(t, "You are talking to Acme's AI assistant.", vs[1].Text)

	s.ok("update_agent", map[string]any{"agent_id": w.agentID, "updates": map[string]any{"disclosureEnabled": false}})
	vs = w.post(t, "", smstest.CallForm("CA00000000000000000000000000000013", ann, lineNumber, "ringing"))
	require.Equal(t, []string{"Say", "Gather"}, names(vs), "the safeguard switched off: no disclosure")
}

func TestVoiceTwoSilentGathersHangUp(t *testing.T) {
	t.Parallel()
	w := newVoiceWorld(t, "")
	const sid = "CA00000000000000000000000000000021"
	w.post(t, "", smstest.CallForm(sid, ann, lineNumber, "ringing"))
	vs := w.post(t, "gather?turn=1", smstest.GatherForm(sid, ann, lineNumber, ""))
	require.Equal(t, []string{"Say", "Gather"}, names(vs))
	require.Equal(t, "gather?turn=1", w.route(t, vs[1].attr("action")))
	vs = w.post(t, "gather?turn=1", smstest.GatherForm(sid, ann, lineNumber, ""))
	require.Equal(t, []string{"Say", "Hangup"}, names(vs))
	require.Equal(t, "silence", *w.call(t, sid).Outcome)
	require.Empty(t, w.b.vendors[catalog.Beta].Requests())
	// A call that was never answered costs nothing.
	require.Empty(t, w.post(t, "status", smstest.CallStatusForm(sid, ann, lineNumber, "completed", 0)))
	require.Empty(t, voiceSpend(t, w.b))
}

func TestVoiceSlowModelGetsAHoldingPhraseAndARedirect(t *testing.T) {
	t.Parallel()
	w := newVoiceWorld(t, "", func(o *setupOpts) { o.voiceSlowAfter = 20 * time.Millisecond })
	const sid = "CA00000000000000000000000000000031"
	w.post(t, "", smstest.CallForm(sid, ann, lineNumber, "ringing"))
	w.b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "Sorry for the wait, here it is.", Delay: 500 * time.Millisecond})
	vs := w.post(t, "gather?turn=1", smstest.GatherForm(sid, ann, lineNumber, "Where is my order?"))
	require.Equal(t, []string{"Say", "Redirect"}, names(vs))
	require.Equal(t, "One moment, please.", vs[0].Text)
	next := w.route(t, strings.TrimSpace(vs[1].Text))
	require.Equal(t, "result?turn=1&wait=1", next)
	for range 2000 {
		vs = w.post(t, next, smstest.GatherForm(sid, ann, lineNumber, ""))
		if names(vs)[0] != "Redirect" {
			break
		}
		next = w.route(t, strings.TrimSpace(vs[0].Text))
	}
	require.Equal(t, []string{"Say", "Gather"}, names(vs))
	require.Equal(t, "Sorry for the wait, here it is.", vs[0].Text)
	require.Equal(t, "gather?turn=2", w.route(t, vs[1].attr("action")))
	require.Len(t, w.b.vendors[catalog.Beta].Requests(), 1, "the turn was answered once")
}

func TestVoiceAfterHoursSaysTheMessageAndHangsUp(t *testing.T) {
	t.Parallel()
	sunday := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	hours := `    business_hours:
      timezone: UTC
      schedule:
        monday: {start: "09:00", end: "17:00"}
      after_hours_message: We are closed. Please call back on Monday.
`
	w := newVoiceWorld(t, hours, func(o *setupOpts) { o.clock = func() time.Time { return sunday } })
	const sid = "CA00000000000000000000000000000041"
	vs := w.post(t, "", smstest.CallForm(sid, ann, lineNumber, "ringing"))
	require.Equal(t, []string{"Say", "Hangup"}, names(vs))
	require.Equal(t, "We are closed. Please call back on Monday.", vs[0].Text)
	require.Equal(t, "after_hours", *w.call(t, sid).Outcome)
	require.Empty(t, w.b.vendors[catalog.Beta].Requests())
}

func TestVoiceFromAWorkspaceThatCannotPayIsAnApologyAndNoModelCall(t *testing.T) {
	t.Parallel()
	w := newVoiceWorld(t, "")
	_, err := w.b.store.Pool().Exec(context.Background(), `UPDATE workspaces SET balance_nano_usd = 0 WHERE id = $1`, w.b.workspace.ID)
	require.NoError(t, err)
	const sid = "CA00000000000000000000000000000051"
	vs := w.post(t, "", smstest.CallForm(sid, ann, lineNumber, "ringing"))
	require.Equal(t, []string{"Say", "Hangup"}, names(vs))
	require.Contains(t, vs[0].Text, "Sorry, we cannot take your call")
	require.Equal(t, "no_credit", *w.call(t, sid).Outcome)
	require.Empty(t, w.b.vendors[catalog.Beta].Requests())
}

func TestVoiceWebhookWithABadSignatureIs403(t *testing.T) {
	t.Parallel()
	w := newVoiceWorld(t, "")
	form := smstest.CallForm("CA00000000000000000000000000000061", ann, lineNumber, "ringing")
	status, body := w.postRaw(t, "", form, false)
	require.Equal(t, http.StatusForbidden, status, body)
	status, _ = w.postRaw(t, "nowhere", form, true)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, 0, w.b.countWhere(t, `SELECT count(*) FROM voice_calls WHERE workspace_id = $1`, w.b.workspace.ID))
}
