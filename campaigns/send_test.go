package campaigns_test

import (
	"context"
	"encoding/json"
	"sort"
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
	"switchboard/phonenumbers"
)

func TestACampaignMessagesEachConsentingContactOnceAcrossProcesses(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	w.ready(t)
	var consenting []string
	for _, phone := range []string{"+14155550200", "+14155550201", "+14155550202", "+14155550203", "+14155550204"} {
		c := w.contact(t, contacts.Input{Phone: ptr(phone), Tags: []string{"promo"}, ConsentSMS: ptr(true)})
		consenting = append(consenting, *c.Phone)
	}
	noConsent := w.contact(t, contacts.Input{Phone: ptr("+14155550300"), Tags: []string{"promo"}})
	gone := w.contact(t, contacts.Input{Phone: ptr("+14155550301"), Tags: []string{"promo"}, ConsentSMS: ptr(true)})
	_, err := w.contacts.Delete(ctx, w.ws, gone.ID)
	require.NoError(t, err)
	emailOnly := w.contact(t, contacts.Input{Email: ptr("eve@example.com"), Tags: []string{"promo"}, ConsentSMS: ptr(true)})
	w.contact(t, contacts.Input{Phone: ptr("+14155550302"), Tags: []string{"other"}, ConsentSMS: ptr(true)})
	w.sms.FailTo("+14155550204")
	before := w.balance(t)

	c := w.launch(t, "Promo", "Spring sale!", campaigns.Audience{Tags: []string{"promo"}}, campaigns.Schedule{RatePerMinute: 2})
	require.Equal(t, campaigns.Running, c.Status)
	require.Equal(t, 1, w.ticks(t, c.ID), "its sending job is queued with it")

	// One tick decides at most rate_per_minute sends, then snoozes until the next period.
	require.NotZero(t, w.tick(t, w.svc, c.ID))
	require.Len(t, w.sms.Messages(), 2)

	// A restart, and a racing replica: two processes work the campaign's ticks at once.
	other := w.replica(t)
	for range 10 {
		w.clock.Advance(period)
		var wg sync.WaitGroup
		for _, svc := range []*campaigns.Service{w.svc, other} {
			wg.Go(func() { w.tick(t, svc, c.ID) })
		}
		wg.Wait()
		if w.get(t, c.ID).Status == campaigns.Completed {
			break
		}
	}
	final := w.get(t, c.ID)
	require.Equal(t, campaigns.Completed, final.Status)
	require.NotNil(t, final.CompletedAt)
	require.Equal(t, campaigns.Counts{Sent: 4, Failed: 1, Skipped: 3}, final.Counts)

	decided := w.decisions(t, c.ID)
	require.Len(t, decided, 8, "every contact of the audience decided once")
	require.Equal(t, "skipped:no_consent", decided[noConsent.ID])
	require.Equal(t, "skipped:deleted", decided[gone.ID])
	require.Equal(t, "skipped:no_phone", decided[emailOnly.ID])
	for _, d := range decided {
		require.NotEqual(t, "sending:", d, "every send has its answer")
	}

	var to []string
	for _, m := range w.sms.Messages() {
		to = append(to, m.To)
		require.Equal(t, "Spring sale!", m.Body)
		require.Equal(t, "+14155550100", m.From, "from the workspace's number")
	}
	sort.Strings(to)
	require.Equal(t, consenting[:4], to, "exactly one message per consenting contact; the refused one is not retried")
	require.Equal(t, before-4*phonenumbers.NanoUSDPerCredit, w.balance(t), "a segment of 1 credit per message sent; none for the failed one")

	evs, err := w.store.EventsAfter(ctx, w.ws, 0, 1000)
	require.NoError(t, err)
	opened := 0
	for _, e := range evs {
		var env struct {
			Type string
			Data map[string]any
		}
		require.NoError(t, json.Unmarshal(e.Envelope, &env))
		if env.Type == "conversation.created" {
			opened++
			require.Equal(t, c.ID.String(), env.Data["campaign_id"])
			require.Equal(t, w.agentID.String(), env.Data["agent_id"])
			require.NotEmpty(t, env.Data["contact_id"])
		}
	}
	require.Equal(t, 5, opened, "each send opened a conversation with its contact")
	require.Zero(t, w.tick(t, w.svc, c.ID), "a completed campaign's job ends")
}

func TestAPausedCampaignResumesWhereItStopped(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	w.ready(t)
	for _, phone := range []string{"+14155550400", "+14155550401", "+14155550402"} {
		w.contact(t, contacts.Input{Phone: ptr(phone), Lists: []string{"Regulars"}, ConsentSMS: ptr(true)})
	}
	lists, err := w.contacts.Lists(ctx, w.ws)
	require.NoError(t, err)
	c := w.launch(t, "Drip", "Hi", campaigns.Audience{ListIDs: []uuid.UUID{lists.Data[0].ID}}, campaigns.Schedule{RatePerMinute: 1})
	require.NotZero(t, w.tick(t, w.svc, c.ID))
	require.Equal(t, 1, w.get(t, c.ID).Counts.Sent)

	paused, err := w.svc.Pause(ctx, w.ws, c.ID)
	require.NoError(t, err)
	require.Equal(t, campaigns.Paused, paused.Status)
	require.Equal(t, "user", *paused.PausedReason)
	w.clock.Advance(period)
	require.Zero(t, w.tick(t, w.svc, c.ID), "a paused campaign's job ends")
	require.Len(t, w.sms.Messages(), 1)

	_, err = w.svc.Update(ctx, w.ws, c.ID, json.RawMessage(`{"draft":true}`))
	require.Equal(t, apierr.KindInvalid, apierr.As(err).Kind, "a started campaign is no draft again")
	_, err = w.svc.Update(ctx, w.ws, c.ID, json.RawMessage(`{"first_message":"Hi again"}`))
	require.NoError(t, err)
	started, err := w.svc.Start(ctx, w.ws, c.ID)
	require.NoError(t, err)
	require.Equal(t, campaigns.Running, started.Status)
	require.Nil(t, started.PausedReason)
	for range 5 {
		w.clock.Advance(period)
		if w.tick(t, w.svc, c.ID) == 0 {
			break
		}
	}
	done := w.get(t, c.ID)
	require.Equal(t, campaigns.Completed, done.Status)
	require.Equal(t, 3, done.Counts.Sent)
	seen := map[string]string{}
	for _, m := range w.sms.Messages() {
		require.Empty(t, seen[m.To], "messaged once: %s", m.To)
		seen[m.To] = m.Body
	}
	require.Len(t, seen, 3)
	require.Equal(t, "Hi", seen["+14155550400"], "the first, before the pause")
	require.Equal(t, "Hi again", seen["+14155550402"])

	_, err = w.svc.Start(ctx, w.ws, c.ID)
	require.Equal(t, "invalid_transition", apierr.As(err).Code)
	_, err = w.svc.Update(ctx, w.ws, c.ID, json.RawMessage(`{"name":"Too late"}`))
	require.Equal(t, apierr.KindConflict, apierr.As(err).Kind)
	_, err = w.svc.Pause(ctx, w.ws, c.ID)
	require.Equal(t, "invalid_transition", apierr.As(err).Code)
}

func TestAScheduledCampaignWaitsForItsStart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.ready(t)
	w.contact(t, contacts.Input{Phone: ptr("+14155550500"), Tags: []string{"later"}, ConsentSMS: ptr(true)})
	start := w.clock.Now().Add(90 * time.Second)
	c := w.launch(t, "Later", "Hello", campaigns.Audience{Tags: []string{"later"}}, campaigns.Schedule{StartAt: &start})
	require.Equal(t, campaigns.Scheduled, c.Status)

	require.Equal(t, period, w.tick(t, w.svc, c.ID), "at most a period: start_at may move earlier")
	w.clock.Advance(period)
	require.Equal(t, 30*time.Second, w.tick(t, w.svc, c.ID))
	require.Equal(t, campaigns.Scheduled, w.get(t, c.ID).Status)
	require.Empty(t, w.sms.Messages())

	w.clock.Advance(30 * time.Second)
	for range 3 {
		if w.tick(t, w.svc, c.ID) == 0 {
			break
		}
	}
	require.Equal(t, campaigns.Completed, w.get(t, c.ID).Status)
	require.Len(t, w.sms.Messages(), 1)
}

func TestASendingWindowHoldsTheSends(t *testing.T) {
	t.Parallel()
	w := newWorld(t) // the clock: 15:00 UTC, 10:00 in New York
	w.ready(t)
	w.contact(t, contacts.Input{Phone: ptr("+14155550600"), Tags: []string{"evening"}, ConsentSMS: ptr(true)})
	c := w.launch(t, "Evening", "Good evening", campaigns.Audience{Tags: []string{"evening"}},
		campaigns.Schedule{WindowStart: ptr("18:00"), WindowEnd: ptr("21:00"), Timezone: ptr("America/New_York")})
	require.Equal(t, period, w.tick(t, w.svc, c.ID), "closed: the job looks again within a period")
	require.Empty(t, w.sms.Messages())
	w.clock.Advance(8 * time.Hour) // 18:00 in New York
	for range 3 {
		if w.tick(t, w.svc, c.ID) == 0 {
			break
		}
	}
	require.Len(t, w.sms.Messages(), 1)
}

func TestStartingNeedsTheGateAndEverythingToSend(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()

	var gate *campaigns.GateError
	require.ErrorAs(t, w.svc.Gate(ctx, w.ws), &gate)
	require.Equal(t, compliance.DefaultVersion, gate.Version)
	require.Contains(t, gate.Error(), "outbound_compliance_required")
	w.accept(t, "v0")
	require.ErrorAs(t, w.svc.Gate(ctx, w.ws), &gate, "an older version's acceptance does not open the gate")
	w.accept(t, gate.Version)
	require.NoError(t, w.svc.Gate(ctx, w.ws))

	// A member may draft, not launch.
	name := "Spring"
	draft, err := w.svc.Create(ctx, w.ws, access.Member, campaigns.Input{Name: &name, Draft: ptr(true)})
	require.NoError(t, err)
	require.Equal(t, campaigns.Draft, draft.Status)
	_, err = w.svc.Create(ctx, w.ws, access.Member, campaigns.Input{Name: &name})
	require.Equal(t, apierr.KindPermission, apierr.As(err).Kind)

	// Start names the first thing missing; nothing changes until all is there.
	_, err = w.svc.Start(ctx, w.ws, draft.ID)
	require.Equal(t, "agent_id", apierr.As(err).Param)
	_, err = w.svc.Update(ctx, w.ws, draft.ID, json.RawMessage(`{"agent_id":"`+w.agentID.String()+`"}`))
	require.NoError(t, err)
	_, err = w.svc.Start(ctx, w.ws, draft.ID)
	require.Equal(t, "deployment_id", apierr.As(err).Param)
	_, err = w.svc.Update(ctx, w.ws, draft.ID, json.RawMessage(`{"deployment_id":"`+w.deploymentID.String()+`","first_message":"Hi!"}`))
	require.NoError(t, err)
	_, err = w.svc.Start(ctx, w.ws, draft.ID)
	require.Equal(t, "audience", apierr.As(err).Param)
	_, err = w.svc.Update(ctx, w.ws, draft.ID, json.RawMessage(`{"audience":{"tags":["none-yet"]}}`))
	require.NoError(t, err)
	_, err = w.svc.Start(ctx, w.ws, draft.ID)
	require.Equal(t, "no_sending_number", apierr.As(err).Code)
	require.Equal(t, campaigns.Draft, w.get(t, draft.ID).Status)
	require.Zero(t, w.ticks(t, draft.ID))

	w.buyNumber(t, "+14155550100")
	started, err := w.svc.Start(ctx, w.ws, draft.ID)
	require.NoError(t, err)
	require.Equal(t, campaigns.Running, started.Status)
	require.Equal(t, 1, w.ticks(t, draft.ID))
	require.Zero(t, w.tick(t, w.svc, draft.ID), "an empty audience completes at once")
	require.Equal(t, campaigns.Completed, w.get(t, draft.ID).Status)

	cancelled, err := w.svc.Cancel(ctx, w.ws, draft.ID)
	require.Error(t, err, "a completed campaign is over")
	require.Equal(t, "invalid_transition", apierr.As(err).Code, "%+v", cancelled)
}
