package campaigns_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/campaigns"
	"switchboard/compliance"
	"switchboard/contacts"
	"switchboard/store"
)

// fakeCaller is the voice service's side of a voice campaign (package voice places the calls
// at the carrier; the server's voice campaign tests drive those over HTTP).
type fakeCaller struct {
	mu    sync.Mutex
	calls []string // numbers called, in order
}

func (f *fakeCaller) Configured() bool { return true }

func (f *fakeCaller) PlaceCall(_ context.Context, ch store.Channel, to string, _ uuid.UUID) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, to)
	return "CA" + uuid.NewString(), nil
}

func (f *fakeCaller) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// voiceWorld is newWorld with a connected voice channel, the agent deployed on it, a
// voicemail drop and a fake caller.
type voiceWorld struct {
	*world
	caller       *fakeCaller
	deploymentID uuid.UUID
	drop         store.Recording
	disclosure   store.Recording
}

func newVoiceWorld(t *testing.T) *voiceWorld {
	t.Helper()
	ctx := context.Background()
	w := newWorld(t)
	v := &voiceWorld{world: w, caller: &fakeCaller{}}
	number := "+14155550100"
	ch, err := w.store.CreateChannel(ctx, w.ws, store.ChannelWrite{ID: store.NewChannelID(), Provider: "telco_voice", Name: "Line",
		Config: json.RawMessage(`{}`), Status: store.ChannelConnected, InboundToken: uuid.NewString(), Address: &number})
	require.NoError(t, err)
	d, err := w.store.DeployAgent(ctx, w.ws, store.Deploy{AgentID: w.agentID, ChannelType: "telco_voice", ChannelID: &ch.ID, Config: json.RawMessage(`{}`)})
	require.NoError(t, err)
	v.deploymentID = d.ID
	v.drop, err = w.store.InsertRecording(ctx, w.ws, store.NewRecording{Kind: "voicemail_drop", Name: "Renewal drop", Format: "wav", DurationMS: 900, Audio: []byte("RIFF")})
	require.NoError(t, err)
	v.disclosure, err = w.store.InsertRecording(ctx, w.ws, store.NewRecording{Kind: "disclosure", Name: "AI notice", Format: "wav", DurationMS: 900, Audio: []byte("RIFF")})
	require.NoError(t, err)
	w.calls = v.caller
	w.svc = w.process(t, w.store)
	w.accept(t, compliance.DefaultVersion)
	return v
}

func (v *voiceWorld) input(name string, drop *uuid.UUID, sched campaigns.Schedule) campaigns.Input {
	return campaigns.Input{Name: &name, AgentID: &v.agentID, DeploymentID: &v.deploymentID, VoicemailRecordingID: drop,
		Audience: &campaigns.Audience{Tags: []string{"renewal"}}, Schedule: &sched}
}

func TestVoiceCampaignNeedsAVoicemailDropRecording(t *testing.T) {
	t.Parallel()
	v := newVoiceWorld(t)
	ctx := context.Background()
	for _, id := range []*uuid.UUID{nil, &v.disclosure.ID, ptr(uuid.New())} {
		for _, draft := range []bool{false, true} {
			in := v.input("Calls", id, campaigns.Schedule{})
			in.Draft = &draft
			_, err := v.svc.Create(ctx, v.ws, access.Admin, in)
			var e *apierr.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, apierr.KindInvalid, e.Kind)
			require.Equal(t, "voicemail_recording_id", e.Param)
		}
	}
	list, err := v.svc.List(ctx, v.ws, "", nil)
	require.NoError(t, err)
	require.Empty(t, list.Data, "nothing written")

	// An SMS campaign takes none.
	name, msg := "Texts", "Hi"
	_, err = v.svc.Create(ctx, v.ws, access.Admin, campaigns.Input{Name: &name, AgentID: &v.agentID, DeploymentID: &v.world.deploymentID,
		FirstMessage: &msg, VoicemailRecordingID: &v.drop.ID, Audience: &campaigns.Audience{Tags: []string{"x"}}, Draft: ptr(true)})
	var e *apierr.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "voicemail_recording_id", e.Param)

	// A voice campaign needs no first_message.
	c, err := v.svc.Create(ctx, v.ws, access.Admin, v.input("Calls", &v.drop.ID, campaigns.Schedule{}))
	require.NoError(t, err)
	require.Equal(t, campaigns.Running, c.Status)
	require.Equal(t, v.drop.ID, *c.VoicemailRecordingID)
}

// TestVoiceCampaignCallsInsideEachContactsOwnWindow: consent_calls (not consent_sms) lets a
// contact be called; a contact is called only between 08:00 and 21:00 in its own zone (its
// timezone, else its number's), deferred (never skipped) outside it and called once it opens.
func TestVoiceCampaignCallsInsideEachContactsOwnWindow(t *testing.T) {
	t.Parallel()
	v := newVoiceWorld(t)
	// Monday 15:00 UTC: 07:00 in Los Angeles, 16:00 in Berlin, 10:00 in New York.
	v.clock.t = time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)
	la := v.contact(t, contacts.Input{Phone: ptr("+14155550201"), Tags: []string{"renewal"}, ConsentCalls: ptr(true)})
	berlin := v.contact(t, contacts.Input{Phone: ptr("+14155550202"), Timezone: ptr("Europe/Berlin"), Tags: []string{"renewal"}, ConsentCalls: ptr(true)})
	ny := v.contact(t, contacts.Input{Phone: ptr("+12125550203"), Tags: []string{"renewal"}, ConsentCalls: ptr(true)})
	smsOnly := v.contact(t, contacts.Input{Phone: ptr("+12125550204"), Tags: []string{"renewal"}, ConsentSMS: ptr(true)})
	require.Equal(t, "Europe/Berlin", *berlin.Timezone)

	c, err := v.svc.Create(context.Background(), v.ws, access.Admin, v.input("Calls", &v.drop.ID, campaigns.Schedule{RatePerMinute: 10}))
	require.NoError(t, err)
	snooze := v.tick(t, v.svc, c.ID)
	require.Equal(t, []string{"+14155550202", "+12125550203"}, v.caller.called(), "Berlin and New York are in their window")
	require.Equal(t, period, snooze, "the job comes back each period until Los Angeles reaches 08:00")
	decided := v.decisions(t, c.ID)
	require.Equal(t, "skipped:no_consent", decided[smsOnly.ID], "consent_sms is not consent to calls")
	require.Equal(t, "sent:", decided[berlin.ID])
	require.Equal(t, "sent:", decided[ny.ID])
	_, ok := decided[la.ID]
	require.False(t, ok, "deferred, not decided")
	require.Equal(t, campaigns.Running, v.get(t, c.ID).Status)

	// Still 07:59 in Los Angeles: nobody is called.
	v.clock.Advance(59 * time.Minute)
	require.Equal(t, time.Minute, v.tick(t, v.svc, c.ID))
	require.Len(t, v.caller.called(), 2)
	v.clock.Advance(time.Minute)
	v.tick(t, v.svc, c.ID)
	require.Equal(t, []string{"+14155550202", "+12125550203", "+14155550201"}, v.caller.called(), "called once its window opens")
	v.tick(t, v.svc, c.ID)
	final := v.get(t, c.ID)
	require.Equal(t, campaigns.Completed, final.Status)
	require.Equal(t, campaigns.Counts{Sent: 3, Skipped: 1}, final.Counts)
	require.Len(t, v.caller.called(), 3, "each contact called once")
}

// TestVoiceCampaignWindowOfItsOwnAndZones: a campaign's own window replaces 08:00-21:00, in
// each contact's zone; a number's zone comes from its prefix.
func TestVoiceCampaignWindowOfItsOwnAndZones(t *testing.T) {
	t.Parallel()
	require.Equal(t, "America/Los_Angeles", campaigns.PhoneZone("+14155550100").String())
	require.Equal(t, "America/New_York", campaigns.PhoneZone("+12125550100").String())
	require.Equal(t, "Europe/Berlin", campaigns.PhoneZone("+4930123456").String())
	require.Nil(t, campaigns.PhoneZone("not a number"))
	require.Equal(t, "Europe/Paris", campaigns.ContactZone(ptr("Europe/Paris"), ptr("+14155550100"), nil).String())
	require.Equal(t, "Asia/Tokyo", campaigns.ContactZone(nil, ptr("+999"), ptr("Asia/Tokyo")).String())
	require.Equal(t, "UTC", campaigns.ContactZone(nil, nil, nil).String())

	v := newVoiceWorld(t)
	v.clock.t = time.Date(2026, 11, 23, 19, 0, 0, 0, time.UTC) // 11:00 in Los Angeles
	v.contact(t, contacts.Input{Phone: ptr("+14155550201"), Tags: []string{"renewal"}, ConsentCalls: ptr(true)})
	c, err := v.svc.Create(context.Background(), v.ws, access.Admin, v.input("Calls", &v.drop.ID,
		campaigns.Schedule{WindowStart: ptr("12:00"), WindowEnd: ptr("13:00"), RatePerMinute: 5}))
	require.NoError(t, err)
	require.Equal(t, time.Minute, v.tick(t, v.svc, c.ID), "an hour to go: the job comes back each period")
	require.Empty(t, v.caller.called())
	v.clock.Advance(time.Hour)
	v.tick(t, v.svc, c.ID)
	require.Len(t, v.caller.called(), 1)
}

// TestVoiceCampaignPausesCancelsAndStopsWhenUnpaid: a paused or cancelled voice campaign
// places no more calls, and one whose workspace cannot pay pauses before its next call, as
// an SMS campaign does.
func TestVoiceCampaignPausesCancelsAndStopsWhenUnpaid(t *testing.T) {
	t.Parallel()
	v := newVoiceWorld(t)
	ctx := context.Background()
	v.clock.t = time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC) // 10:00 in Los Angeles
	for _, p := range []string{"+14155550201", "+14155550202", "+14155550203"} {
		v.contact(t, contacts.Input{Phone: ptr(p), Tags: []string{"renewal"}, ConsentCalls: ptr(true)})
	}
	c, err := v.svc.Create(ctx, v.ws, access.Admin, v.input("Calls", &v.drop.ID, campaigns.Schedule{RatePerMinute: 1}))
	require.NoError(t, err)
	v.tick(t, v.svc, c.ID)
	require.Len(t, v.caller.called(), 1)
	_, err = v.svc.Pause(ctx, v.ws, c.ID)
	require.NoError(t, err)
	v.clock.Advance(period)
	require.Zero(t, v.tick(t, v.svc, c.ID), "a paused campaign's job ends")
	require.Len(t, v.caller.called(), 1)

	_, err = v.store.Pool().Exec(ctx, `UPDATE workspaces SET balance_nano_usd = 0 WHERE id = $1`, v.ws)
	require.NoError(t, err)
	_, err = v.svc.Start(ctx, v.ws, c.ID)
	var e *apierr.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, apierr.KindQuota, e.Kind, "a workspace that cannot pay starts no calls")
	_, err = v.store.Pool().Exec(ctx, `UPDATE workspaces SET balance_nano_usd = 5000000000 WHERE id = $1`, v.ws)
	require.NoError(t, err)
	_, err = v.svc.Start(ctx, v.ws, c.ID)
	require.NoError(t, err)
	_, err = v.store.Pool().Exec(ctx, `UPDATE workspaces SET balance_nano_usd = 0 WHERE id = $1`, v.ws)
	require.NoError(t, err)
	v.tick(t, v.svc, c.ID)
	got := v.get(t, c.ID)
	require.Equal(t, campaigns.Paused, got.Status)
	require.Equal(t, campaigns.PausedNoCredit, *got.PausedReason)
	require.Len(t, v.caller.called(), 1, "no call its workspace cannot pay for")

	_, err = v.svc.Cancel(ctx, v.ws, c.ID)
	require.NoError(t, err)
	v.tick(t, v.svc, c.ID)
	require.Len(t, v.caller.called(), 1)
}
