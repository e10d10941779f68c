package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/compliance"
	"switchboard/store"
)

func smsSpend(events []storedEvent) []storedEvent {
	var out []storedEvent
	for _, e := range events {
		if e.Data["category"] == "sms" {
			out = append(out, e)
		}
	}
	return out
}

// launch creates a running campaign of the world's agent messaging the tag.
func (w *campaignWorld) launch(t *testing.T, tag, message string, rate int) campaignView {
	t.Helper()
	c := decode[campaignView](t, w.b.send(t, http.MethodPost, "/api/campaigns", `{"name":"Money","agent_id":"`+w.agentID+`","deployment_id":"`+w.deploymentID+
		`","first_message":"`+message+`","audience":{"tags":["`+tag+`"]},"schedule":{"rate_per_minute":`+strconv.Itoa(rate)+`}}`, 201))
	require.Equal(t, "running", c.Status)
	return c
}

func (w *campaignWorld) campaign(t *testing.T, id string) campaignView {
	t.Helper()
	return decode[campaignView](t, w.b.send(t, http.MethodGet, "/api/campaigns/"+id, "", 200))
}

// TestCampaignMessagesAreChargedPerSegment: each message the provider accepts is charged by
// its segments and destination, with spend.recorded {category: sms}; a refused one is not.
func TestCampaignMessagesAreChargedPerSegment(t *testing.T) {
	t.Parallel()
	w := newCampaignWorld(t, func(o *setupOpts) { o.campaignPeriod = 200 * time.Millisecond })
	b := w.b
	b.accept(t, compliance.DefaultVersion)
	b.buyNumber(t)
	b.newContact(t, `{"name":"US","phone":"+14155550201","tags":["p"],"consent_sms":true}`)
	b.newContact(t, `{"name":"UK","phone":"+442071838750","tags":["p"],"consent_sms":true}`)
	b.newContact(t, `{"name":"Refused","phone":"+14155550202","tags":["p"],"consent_sms":true}`)
	w.sms.FailTo("+14155550202")
	before := b.balance(t)

	body := strings.Repeat("a", 200) // two GSM-7 segments
	c := w.launch(t, "p", body, 10)
	require.Eventually(t, func() bool { return w.campaign(t, c.ID).Status == "completed" }, 30*time.Second, 20*time.Millisecond)
	got := w.campaign(t, c.ID)
	require.Equal(t, 2, got.Counts.Sent)
	require.Equal(t, 1, got.Counts.Failed)

	spend := smsSpend(b.events(t, "spend.recorded"))
	require.Len(t, spend, 2, "the refused send is not charged")
	amounts := map[float64]bool{}
	for _, e := range spend {
		amounts[e.Data["amount_usd"].(float64)] = true
		require.Equal(t, c.ID, e.Data["campaign_id"])
		require.Equal(t, float64(2), e.Data["segments"])
		require.True(t, strings.HasPrefix(e.Data["conversation_id"].(string), "mc-"), "%v", e.Data)
		require.NotNil(t, e.Data["balance_usd"])
	}
	require.Equal(t, map[float64]bool{0.02: true, 0.16: true}, amounts, "2 segments at 1 credit to +1, at 8 elsewhere")
	require.Equal(t, before-180_000_000, b.balance(t), "$0.18 in all")
}

// TestACampaignPausesAtTheSpendCapAndCannotStartThere: the message that reaches the cap is
// sent; the campaign pauses before the next, and starting it again is 403 until the cap is
// raised; then it resumes where it stopped.
func TestACampaignPausesAtTheSpendCapAndCannotStartThere(t *testing.T) {
	t.Parallel()
	w := newCampaignWorld(t, func(o *setupOpts) { o.campaignPeriod = 200 * time.Millisecond })
	b := w.b
	b.accept(t, compliance.DefaultVersion)
	b.buyNumber(t) // $1.15 spent this month
	capped := int64(1_160_000_000)
	_, err := b.store.SetMonthlyCapByID(context.Background(), b.workspace.ID, &capped)
	require.NoError(t, err)
	for i := range 3 {
		b.newContact(t, `{"phone":"+1415555030`+strconv.Itoa(i)+`","tags":["cap"],"consent_sms":true}`)
	}
	c := w.launch(t, "cap", "Hi", 10)
	require.Eventually(t, func() bool { return w.campaign(t, c.ID).Status == "paused" }, 30*time.Second, 20*time.Millisecond)
	got := w.campaign(t, c.ID)
	require.Equal(t, "spend_cap_reached", str(got.PausedReason))
	require.Equal(t, 1, got.Counts.Sent, "the message that reached the cap, and no other")
	require.Len(t, w.sms.Messages(), 1)

	e := b.fail(t, http.MethodPost, "/api/campaigns/"+c.ID+"/start", "", 403)
	require.Equal(t, "insufficient_quota", str(e.Code))
	require.Contains(t, e.Message, "monthly spend cap")
	require.Equal(t, "paused", w.campaign(t, c.ID).Status, "nothing changed")

	_, err = b.store.SetMonthlyCapByID(context.Background(), b.workspace.ID, nil)
	require.NoError(t, err)
	b.send(t, http.MethodPost, "/api/campaigns/"+c.ID+"/start", "", 200)
	require.Eventually(t, func() bool { return w.campaign(t, c.ID).Status == "completed" }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, 3, w.campaign(t, c.ID).Counts.Sent)
	require.Len(t, smsSpend(b.events(t, "spend.recorded")), 3)
}

// TestSuspendingAWorkspacePausesItsCampaigns: the suspension pauses scheduled and running
// campaigns in its transaction; a campaign whose sending job finds the workspace suspended
// (or out of credit) pauses instead of sending.
func TestSuspendingAWorkspacePausesItsCampaigns(t *testing.T) {
	t.Parallel()
	w := newCampaignWorld(t, func(o *setupOpts) { o.campaignPeriod = 300 * time.Millisecond })
	b := w.b
	ctx := context.Background()
	b.accept(t, compliance.DefaultVersion)
	b.buyNumber(t)
	later := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns", `{"name":"Later","agent_id":"`+w.agentID+`","deployment_id":"`+w.deploymentID+
		`","first_message":"Hi","audience":{"tags":["x"]},"schedule":{"start_at":"2999-01-01T00:00:00Z"}}`, 201))
	require.Equal(t, "scheduled", later.Status)
	draft := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns", `{"name":"Draft","draft":true}`, 201))

	_, err := b.store.SuspendWorkspace(ctx, b.workspace.Name)
	require.NoError(t, err)
	b.fail(t, http.MethodGet, "/api/campaigns/"+later.ID, "", 403) // a suspended workspace is refused
	_, err = b.store.SetWorkspaceStatus(ctx, b.workspace.Name, store.WorkspaceActive)
	require.NoError(t, err)
	got := w.campaign(t, later.ID)
	require.Equal(t, "paused", got.Status)
	require.Equal(t, "workspace_suspended", str(got.PausedReason), "and it stays paused after the resume")
	require.Equal(t, "draft", w.campaign(t, draft.ID).Status)
	require.Equal(t, "scheduled", decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns/"+later.ID+"/start", "", 200)).Status)

	// A suspension the campaigns did not hear of (set directly): the sending job pauses.
	for i := range 5 {
		b.newContact(t, `{"phone":"+1415555040`+strconv.Itoa(i)+`","tags":["drip"],"consent_sms":true}`)
	}
	running := w.launch(t, "drip", "Hello", 1)
	require.Eventually(t, func() bool { return w.campaign(t, running.ID).Counts.Sent >= 1 }, 30*time.Second, 20*time.Millisecond)
	_, err = b.store.SetWorkspaceStatus(ctx, b.workspace.Name, store.WorkspaceSuspended)
	require.NoError(t, err)
	campaignStatus := func() store.Campaign {
		c, err := b.store.CampaignByID(ctx, b.workspace.ID, uuid.MustParse(running.ID))
		require.NoError(t, err)
		return c
	}
	require.Eventually(t, func() bool { return campaignStatus().Status == "paused" }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, "workspace_suspended", str(campaignStatus().PausedReason))
	require.Less(t, campaignStatus().SentCount, 5)

	// Out of credit: the same, with insufficient_quota.
	_, err = b.store.SetWorkspaceStatus(ctx, b.workspace.Name, store.WorkspaceActive)
	require.NoError(t, err)
	sent := campaignStatus().SentCount
	b.send(t, http.MethodPost, "/api/campaigns/"+running.ID+"/start", "", 200)
	_, err = b.store.AddCredit(ctx, b.workspace.Name, -b.balance(t))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return campaignStatus().Status == "paused" }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, "insufficient_quota", str(campaignStatus().PausedReason))
	require.LessOrEqual(t, campaignStatus().SentCount, sent+1, "at most the message already decided when the credit went")
}
