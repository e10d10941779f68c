package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/compliance"
	"switchboard/manage"
	"switchboard/sms/smstest"
	"switchboard/store"
)

// The people a voice campaign calls (Los Angeles numbers: the test's clock is 10:00 there).
const (
	callHuman   = "+14155550401"
	callMachine = "+14155550402"
	callBusy    = "+14155550403"
	callNoOK    = "+14155550404"
)

type voiceCampaignView struct {
	ID                   string  `json:"id"`
	Status               string  `json:"status"`
	VoicemailRecordingID *string `json:"voicemail_recording_id"`
	Counts               struct {
		Sent, Delivered, Undelivered, Failed, Skipped, Answered, Voicemail int
	}
}

// TestVoiceCampaignCallsWithMachineDetection drives a voice campaign as the carrier would: the
// campaign needs a voicemail_drop recording (400 naming voicemail_recording_id, nothing
// written); it places each consenting contact's call at the carrier with answering-machine
// detection; a machine hears the drop, then the call hangs up; a person hears the disclosure
// first, then the greeting, and talks with the agent; status callbacks count the calls and
// meter them per started minute.
func TestVoiceCampaignCallsWithMachineDetection(t *testing.T) {
	t.Parallel()
	monday := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC) // 10:00 in Los Angeles
	w := newVoiceWorld(t, "", func(o *setupOpts) {
		o.clock = func() time.Time { return monday }
		o.campaignPeriod = 300 * time.Millisecond
	})
	b := w.b
	ctx := context.Background()
	b.accept(t, compliance.DefaultVersion)
	var deploymentID string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT id::text FROM deployments WHERE channel_id = $1`, w.channel.ID).Scan(&deploymentID))
	drop, err := b.store.InsertRecording(ctx, b.workspace.ID, store.NewRecording{Kind: "voicemail_drop", Name: "Renewal reminder", Format: "mp3",
		DurationMS: 8000, Audio: []byte("ID3")})
	require.NoError(t, err)
	notice, err := b.store.InsertRecording(ctx, b.workspace.ID, store.NewRecording{Kind: "disclosure", Name: "AI notice", Format: "wav",
		DurationMS: 1200, Audio: []byte("RIFF")})
	require.NoError(t, err)

	for _, c := range []string{
		`{"name":"Hana","phone":"` + callHuman + `","tags":["renewal"],"consent_calls":true}`,
		`{"name":"Max","phone":"` + callMachine + `","tags":["renewal"],"consent_calls":true,"timezone":"America/Chicago"}`,
		`{"name":"Bea","phone":"` + callBusy + `","tags":["renewal"],"consent_calls":true}`,
		`{"name":"Nico","phone":"` + callNoOK + `","tags":["renewal"],"consent_sms":true}`,
	} {
		b.newContact(t, c)
	}
	e := b.fail(t, http.MethodPost, "/api/contacts", `{"phone":"+14155550499","timezone":"Mars/Olympus"}`, 400)
	require.Equal(t, "timezone", *e.Param)

	body := func(extra string) string {
		return `{"name":"Renewals","agent_id":"` + w.agentID + `","deployment_id":"` + deploymentID +
			`","audience":{"tags":["renewal"]},"schedule":{"rate_per_minute":20}` + extra + `}`
	}
	for _, extra := range []string{"", `,"voicemail_recording_id":"` + notice.ID.String() + `"`,
		`,"voicemail_recording_id":"00000000-0000-4000-8000-000000000000"`, `,"draft":true`} {
		e := b.fail(t, http.MethodPost, "/api/campaigns", body(extra), 400)
		require.Equal(t, "voicemail_recording_id", *e.Param, extra)
	}
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM campaigns WHERE workspace_id = $1`, b.workspace.ID), "nothing written")

	// A draft that uses the drop keeps it from being deleted.
	draft := decode[voiceCampaignView](t, b.send(t, http.MethodPost, "/api/campaigns", body(`,"draft":true,"voicemail_recording_id":"`+drop.ID.String()+`"`), 201))
	e = b.fail(t, http.MethodDelete, "/api/recordings/"+drop.ID.String(), "", 409)
	require.Equal(t, "recording_in_use", *e.Code)
	require.Contains(t, e.Message, "Renewals")

	c := decode[voiceCampaignView](t, b.send(t, http.MethodPost, "/api/campaigns", body(`,"voicemail_recording_id":"`+drop.ID.String()+`"`), 201))
	require.Equal(t, drop.ID.String(), *c.VoicemailRecordingID)
	require.Eventually(t, func() bool { return len(w.carrier.Calls()) >= 3 }, 30*time.Second, 20*time.Millisecond)
	placed := map[string]smstest.PlacedCall{}
	for _, pc := range w.carrier.Calls() {
		placed[pc.To] = pc
		require.Equal(t, lineNumber, pc.From, "from the voice channel's number")
		require.Equal(t, "DetectMessageEnd", pc.Form.Get("MachineDetection"))
		require.Equal(t, "false", pc.Form.Get("AsyncAmd"))
		require.Equal(t, "POST", pc.Form.Get("Method"))
		require.True(t, strings.HasPrefix(w.route(t, pc.URL), "outbound?send="), pc.URL)
		require.True(t, strings.HasPrefix(w.route(t, pc.StatusCallback), "status?send="), pc.StatusCallback)
	}
	require.Len(t, placed, 3, "the contact without consent_calls is not called")
	require.NotContains(t, placed, callNoOK)

	// A machine: after the beep, the voicemail drop, then hang up.
	m := placed[callMachine]
	vs := w.post(t, w.route(t, m.URL), smstest.AnsweredForm(m.SID, lineNumber, callMachine, "machine_end_beep"))
	require.Equal(t, []string{"Play", "Hangup"}, names(vs))
	require.Equal(t, "http://switchboard.test/media/recordings/"+drop.MediaToken+".mp3", strings.TrimSpace(vs[0].Text))
	require.Equal(t, "voicemail_drop", *w.call(t, m.SID).Outcome)
	// A retried webhook is answered alike and counts once.
	require.Equal(t, names(vs), names(w.post(t, w.route(t, m.URL), smstest.AnsweredForm(m.SID, lineNumber, callMachine, "machine_end_beep"))))

	// A person: the disclosure first, then the greeting, then the agent listens.
	h := placed[callHuman]
	vs = w.post(t, w.route(t, h.URL), smstest.AnsweredForm(h.SID, lineNumber, callHuman, "human"))
	require.Equal(t, []string{"Say", "Say", "Gather"}, names(vs))
	require.Equal(t, manage.DefaultDisclosureText, vs[0].Text)
	require.Equal(t, "Thanks for calling Acme, how can I help?", vs[1].Text)
	require.Equal(t, "en-US", vs[2].attr("language"))
	next := vs[2].attr("action")
	require.Equal(t, "gather?turn=1", w.route(t, next))
	vs = w.post(t, w.route(t, next), smstest.GatherForm(h.SID, lineNumber, callHuman, "Is my plan renewing?"))
	require.Equal(t, []string{"Say", "Gather"}, names(vs))
	require.Equal(t, "reply to: Is my plan renewing?", vs[0].Text)

	// Status callbacks: the person talked 65 s (2 minutes), the machine 20 s (1), one was busy.
	bz := placed[callBusy]
	for _, s := range []struct {
		pc      smstest.PlacedCall
		to      string
		status  string
		seconds int
	}{{h, callHuman, "completed", 65}, {m, callMachine, "completed", 20}, {bz, callBusy, "busy", 0}} {
		form := smstest.CallStatusForm(s.pc.SID, lineNumber, s.to, s.status, s.seconds)
		require.Empty(t, w.post(t, w.route(t, s.pc.StatusCallback), form))
		require.Empty(t, w.post(t, w.route(t, s.pc.StatusCallback), form), "a repeated callback changes nothing")
	}
	var final voiceCampaignView
	require.Eventually(t, func() bool {
		final = decode[voiceCampaignView](t, b.send(t, http.MethodGet, "/api/campaigns/"+c.ID, "", 200))
		return final.Status == "completed"
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, [7]int{3, 2, 1, 0, 1, 1, 1}, [7]int{final.Counts.Sent, final.Counts.Delivered, final.Counts.Undelivered,
		final.Counts.Failed, final.Counts.Skipped, final.Counts.Answered, final.Counts.Voicemail},
		"sent, delivered, undelivered, failed, skipped, answered, voicemail")

	minutes := map[float64]int{}
	for _, e := range voiceSpend(t, b) {
		require.Equal(t, c.ID, e.Data["campaign_id"])
		minutes[e.Data["minutes"].(float64)]++
	}
	require.Equal(t, map[float64]int{2: 1, 1: 1}, minutes, "metered per started minute; a busy call costs nothing")

	// The person's conversation: the disclosure, then the greeting, then the turn.
	call := w.call(t, h.SID)
	require.Equal(t, "outbound", call.Direction)
	lines, err := b.store.Transcript(ctx, b.workspace.ID, *call.ConversationID)
	require.NoError(t, err)
	var said []string
	for _, l := range lines {
		said = append(said, l.Role+": "+l.Content)
	}
	require.Equal(t, []string{"assistant: " + manage.DefaultDisclosureText, "assistant: Thanks for calling Acme, how can I help?",
		"user: Is my plan renewing?", "assistant: reply to: Is my plan renewing?"}, said)
	var answeredBy, callStatus string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT answered_by, call_status FROM campaign_sends WHERE provider_message_id = $1`, m.SID).
		Scan(&answeredBy, &callStatus))
	require.Equal(t, [2]string{"machine_end_beep", "completed"}, [2]string{answeredBy, callStatus})

	// The dashboard's transcript shows how each call went.
	viewer := b.signedIn(t, "viewer")
	for sid, want := range map[string]string{
		m.SID: "outcome <strong>voicemail_drop</strong> · ended <strong>completed</strong> after 20 s (1 min billed)",
		h.SID: "ended <strong>completed</strong> after 65 s (2 min billed)",
	} {
		var short string
		require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT short_id FROM conversations WHERE id = $1`, *w.call(t, sid).ConversationID).Scan(&short))
		resp, raw := viewer.do(t, http.MethodGet, "/dashboard/conversations/"+short, "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, string(raw), want)
		require.Contains(t, string(raw), `<p class="call-outcome">Call: outbound`)
	}

	// Once no campaign that is not over uses it, the drop can go; the finished campaign
	// loses it.
	b.send(t, http.MethodPost, "/api/campaigns/"+draft.ID+"/cancel", "", 200)
	b.send(t, http.MethodDelete, "/api/recordings/"+drop.ID.String(), "", 200)
	require.Nil(t, decode[voiceCampaignView](t, b.send(t, http.MethodGet, "/api/campaigns/"+c.ID, "", 200)).VoicemailRecordingID)
}

// TestVoiceFixedPhrasesSpeakTheAgentsLanguage: the flow's own phrases are in the agent's
// language (German here); a language without them falls back to English in an English voice.
func TestVoiceFixedPhrasesSpeakTheAgentsLanguage(t *testing.T) {
	t.Parallel()
	w := newVoiceWorld(t, "")
	s := w.b.mcp(t, w.b.url, w.b.key)
	for i, c := range []struct{ language, text, voice, lang string }{
		{"de-DE", "Sind Sie noch da? Wie kann ich helfen?", "Polly.Vicki-Neural", "de-DE"},
		{"fr", "Êtes-vous toujours là ? Comment puis-je vous aider ?", "Polly.Lea-Neural", "fr-FR"},
		{"es-MX", "¿Sigue ahí? ¿En qué puedo ayudarle?", "Polly.Mia-Neural", "es-MX"},
		{"it-IT", "Are you still there? How can I help?", "Polly.Joanna-Neural", "en-US"},
	} {
		s.ok("update_agent", map[string]any{"agent_id": w.agentID, "updates": map[string]any{"language": c.language}})
		callSID := fmt.Sprintf("CA%032d", 71+i)
		w.post(t, "", smstest.CallForm(callSID, ann, lineNumber, "ringing"))
		vs := w.post(t, "gather?turn=1", smstest.GatherForm(callSID, ann, lineNumber, ""))
		require.Equal(t, []string{"Say", "Gather"}, names(vs), c.language)
		require.Equal(t, c.text, vs[0].Text, c.language)
		require.Equal(t, c.voice, vs[0].attr("voice"), c.language)
		require.Equal(t, c.lang, vs[0].attr("language"), c.language)
	}
}
