package workflows_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/llm/llmtest"
	"switchboard/store"
	"switchboard/workflows"
)

// conversationWithContact opens a conversation of the workspace with a contact and two
// messages.
func (b *bundle) conversationWithContact(t *testing.T) (store.Conversation, store.ContactRecord) {
	t.Helper()
	ctx := context.Background()
	name := "Ann"
	contact, err := b.st.InsertContact(ctx, b.ws.ID, store.NewContact{Name: &name, Source: "api"})
	require.NoError(t, err)
	conv, err := b.st.CreateConversation(ctx, b.ws.ID, "api")
	require.NoError(t, err)
	require.NoError(t, b.st.SetConversationContact(ctx, b.ws.ID, conv.ID, contact.ID))
	return conv, contact
}

func TestEveryStepRunsInOrderAgainstItsWireFake(t *testing.T) {
	t.Parallel()
	b := setup(t)
	crm := newReceiver(t)
	conv, contact := b.conversationWithContact(t)
	wf := b.create(t, `
name: Everything
trigger: {type: manual}
steps:
  - id: summary
    type: agent_prompt
    model: alpha-haiku-4-5
    prompt: "Summarize for {{ input.rep }}"
  - id: crm
    type: http_request
    url: `+crm.URL+`/notes
    body: '{{ to_json({"summary": steps.summary.text, "conversation": conversation.id}) }}'
  - id: tag
    type: apply_label
    label: "crm-{{ steps.crm.json.n }}"
  - id: rename
    type: update_contact
    set: {email: "{{ input.email }}"}
  - id: mail
    type: email
    to: rep@example.com
    subject: "Summary of {{ conversation.id }}"
    body: "{{ contact.name }} <{{ contact.email }}>: {{ steps.summary.text }}"
`)
	b.vendor.Push(llmtest.Reply{Text: "Ann wants a refund.", InputTokens: 1000, OutputTokens: 200})
	r := b.start(t, wf, map[string]any{"rep": "Bo", "email": "ann@example.com", "conversation_id": conv.ShortID})
	before := b.balance(t)

	require.True(t, b.advance(t, b.svc, r).IsZero())

	got := b.run(t, r)
	require.Equal(t, workflows.RunSucceeded, got.Status, got.Error)
	require.Equal(t, []string{"summary", "crm", "tag", "rename", "mail"}, ids(got))
	require.Equal(t, map[string]string{"summary": "succeeded", "crm": "succeeded", "tag": "succeeded", "rename": "succeeded", "mail": "succeeded"}, stepStatuses(got))
	// The model saw the prompt; the receiver the summary and the run's idempotency key.
	req := b.vendor.Requests()
	require.Len(t, req, 1)
	require.Equal(t, "Summarize for Bo", req[0].Messages[len(req[0].Messages)-1].Text)
	hits := crm.requests()
	require.Len(t, hits, 1)
	require.JSONEq(t, `{"summary":"Ann wants a refund.","conversation":"`+conv.ShortID+`"}`, hits[0].Body)
	require.Equal(t, r.ID+".crm", hits[0].Key)
	// The label and the contact, in the database.
	labels, err := b.st.AddConversationLabel(context.Background(), b.ws.ID, conv.ID, "crm-1")
	require.NoError(t, err)
	require.Equal(t, []string{"crm-1"}, labels, "the step applied crm-1 once")
	c, err := b.st.ContactByID(context.Background(), b.ws.ID, contact.ID)
	require.NoError(t, err)
	require.Equal(t, "ann@example.com", *c.Email)
	// The email, at the SMTP sink.
	mails := b.mail.Messages()
	require.Len(t, mails, 1)
	require.Equal(t, "Summary of "+conv.ShortID, mails[0].Subject)
	require.Contains(t, mails[0].Body, "Ann <ann@example.com>: Ann wants a refund.")
	require.Contains(t, mails[0].Raw, "Message-ID: <"+r.ID+".mail@", "the step's idempotency key is the Message-ID")
	// The model call was metered like a turn: alpha-haiku at $1 and $5 per million tokens.
	require.Equal(t, int64(1000*1000+200*5000), before-b.balance(t))
	require.Equal(t, []map[string]any{{"run_id": r.ID, "workflow_id": wf.ID, "status": "succeeded"}}, b.completed(t))
	require.Equal(t, 1, b.eventCount(t, "spend.recorded"))
}

func ids(r workflows.RunView) []string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, s.ID)
	}
	return out
}

func (b *bundle) balance(t *testing.T) int64 {
	t.Helper()
	w, err := b.st.WorkspaceByID(context.Background(), b.ws.ID)
	require.NoError(t, err)
	return w.BalanceNanoUSD
}

func (b *bundle) eventCount(t *testing.T, typ string) int {
	t.Helper()
	evs, err := b.st.EventsAfter(context.Background(), b.ws.ID, 0, 1000)
	require.NoError(t, err)
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func TestAConditionThatFailsSkipsToElse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := newReceiver(t)
	wf := b.create(t, `
name: Big spenders
trigger: {type: manual}
steps:
  - {id: big, type: if, condition: 'input.amount > 100', else: done}
  - {id: alert, type: http_request, url: "`+hook.URL+`/alert"}
  - {id: done, type: http_request, url: "`+hook.URL+`/done"}
`)
	small := b.start(t, wf, map[string]any{"amount": 5})
	b.advance(t, b.svc, small)
	got := b.run(t, small)
	require.Equal(t, workflows.RunSucceeded, got.Status)
	require.Equal(t, map[string]string{"big": "succeeded", "alert": "skipped", "done": "succeeded"}, stepStatuses(got))
	require.Equal(t, map[string]any{"result": false}, got.Steps[0].Output)
	big := b.start(t, wf, map[string]any{"amount": 500})
	b.advance(t, b.svc, big)
	var paths []string
	for _, h := range hook.requests() {
		paths = append(paths, h.Path)
	}
	require.Equal(t, []string{"/done", "/alert", "/done"}, paths)
}

func TestAWaitResumesOnTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := newReceiver(t)
	wf := b.create(t, `
name: Later
trigger: {type: manual}
steps:
  - {id: pause, type: wait, duration: 1h}
  - {id: ping, type: http_request, url: "`+hook.URL+`"}
`)
	r := b.start(t, wf, nil)
	start := b.clock.Now()
	require.Equal(t, start.Add(time.Hour), b.advance(t, b.svc, r))
	require.Equal(t, workflows.RunWaiting, b.run(t, r).Status)
	b.clock.Add(59 * time.Minute)
	require.Equal(t, start.Add(time.Hour), b.advance(t, b.svc, r), "a job woken early waits again")
	require.Empty(t, hook.requests())
	b.clock.Add(time.Minute)
	require.True(t, b.advance(t, b.svc, r).IsZero())
	require.Len(t, hook.requests(), 1)
	got := b.run(t, r)
	require.Equal(t, workflows.RunSucceeded, got.Status)
	require.Equal(t, "succeeded", got.Steps[0].Status)
}

func TestAWaitUntilTheNextMorning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.create(t, `
name: Morning
trigger: {type: manual}
steps:
  - {id: morning, type: wait, until: 'next_local(now, "09:00", "Europe/Paris")'}
`)
	r := b.start(t, wf, nil)
	// 20:00 UTC on the 27th is 21:00 in Paris: 9:00 in Paris the next morning is 8:00 UTC.
	require.Equal(t, time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC), b.advance(t, b.svc, r))
}

// A replica dies in the middle of a run (here: while its second request is in flight). The
// run resumes on another replica at that step: the first request is not sent again, the
// second is sent again with the same idempotency key, the email goes out once.
func TestAResumedRunSendsNothingTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := newReceiver(t)
	wf := b.create(t, `
name: Crash
trigger: {type: manual}
steps:
  - {id: first, type: http_request, url: "`+hook.URL+`/first"}
  - {id: second, type: http_request, url: "`+hook.URL+`/second"}
  - {id: mail, type: email, to: ops@example.com, subject: done, body: done}
`)
	r := b.start(t, wf, nil)
	ctx, kill := context.WithCancel(context.Background())
	hook.onHit = func(n int) {
		if n == 2 {
			kill() // the replica dies with the second request sent
		}
	}
	_, err := b.svc.Advance(ctx, b.ws.ID, b.runID(t, r))
	require.Error(t, err)
	mid := b.run(t, r)
	require.Equal(t, map[string]string{"first": "succeeded", "second": "running"}, stepStatuses(mid))

	hook.onHit = nil
	require.True(t, b.advance(t, b.replica(), r).IsZero())
	got := b.run(t, r)
	require.Equal(t, workflows.RunSucceeded, got.Status, got.Error)
	var paths, keys []string
	for _, h := range hook.requests() {
		paths, keys = append(paths, h.Path), append(keys, h.Key)
	}
	require.Equal(t, []string{"/first", "/second", "/second"}, paths)
	require.Equal(t, []string{r.ID + ".first", r.ID + ".second", r.ID + ".second"}, keys, "the resent request carries the same key")
	require.Equal(t, 2, got.Steps[1].Attempts)
	require.Len(t, b.mail.Messages(), 1)
	// Working the finished run again (a duplicate job) does nothing.
	require.True(t, b.advance(t, b.replica(), r).IsZero())
	require.Len(t, hook.requests(), 3)
	require.Len(t, b.completed(t), 1)
}

func TestATransientFailureIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := newReceiver(t)
	hook.statuses = []int{503, 502}
	wf := b.create(t, `
name: Flaky
trigger: {type: manual}
steps:
  - {id: call, type: http_request, url: "`+hook.URL+`", retries: 2}
`)
	r := b.start(t, wf, nil)
	start := b.clock.Now()
	require.Equal(t, start.Add(time.Minute), b.advance(t, b.svc, r), "backoff after the first attempt")
	got := b.run(t, r)
	require.Equal(t, "retrying", got.Steps[0].Status)
	require.Contains(t, *got.Steps[0].Error, "503")
	b.clock.Add(time.Minute)
	require.Equal(t, start.Add(3*time.Minute), b.advance(t, b.svc, r), "a longer backoff after the second")
	b.clock.Add(2 * time.Minute)
	require.True(t, b.advance(t, b.svc, r).IsZero())
	got = b.run(t, r)
	require.Equal(t, workflows.RunSucceeded, got.Status)
	require.Equal(t, 3, got.Steps[0].Attempts)
	require.Len(t, hook.requests(), 3)

	// A 4xx is not transient: the run fails at once with the reason.
	hook.statuses = []int{404}
	r = b.start(t, wf, nil)
	require.True(t, b.advance(t, b.svc, r).IsZero())
	got = b.run(t, r)
	require.Equal(t, workflows.RunFailed, got.Status)
	require.Contains(t, *got.Error, "step call (http_request) failed")
	require.Contains(t, *got.Error, "404")
}

func TestCancelStopsARunOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hook := newReceiver(t)
	wf := b.create(t, `
name: Cancel me
trigger: {type: manual}
steps:
  - {id: pause, type: wait, duration: 10m}
  - {id: ping, type: http_request, url: "`+hook.URL+`"}
`)
	r := b.start(t, wf, nil)
	require.False(t, b.advance(t, b.svc, r).IsZero())
	got, err := b.svc.Cancel(context.Background(), b.ws.ID, r.ID)
	require.NoError(t, err)
	require.Equal(t, workflows.RunCancelled, got.Status)
	again, err := b.svc.Cancel(context.Background(), b.ws.ID, r.ID)
	require.NoError(t, err)
	require.Equal(t, workflows.RunCancelled, again.Status)
	b.clock.Add(time.Hour)
	require.True(t, b.advance(t, b.svc, r).IsZero(), "the job waking after the cancel stops")
	require.Empty(t, hook.requests())
	require.Equal(t, []map[string]any{{"run_id": r.ID, "workflow_id": wf.ID, "status": "cancelled"}}, b.completed(t))
}

func TestARunStopsAtItsTimeLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wf := b.create(t, `
name: Too slow
trigger: {type: manual}
timeout: 5m
steps:
  - {id: pause, type: wait, duration: 1h}
`)
	r := b.start(t, wf, nil)
	b.advance(t, b.svc, r)
	b.clock.Add(5 * time.Minute)
	require.True(t, b.advance(t, b.svc, r).IsZero())
	got := b.run(t, r)
	require.Equal(t, workflows.RunFailed, got.Status)
	require.Contains(t, *got.Error, "time limit")
	require.Equal(t, "failed", b.completed(t)[0]["status"])
}

func TestAWorkspaceThatCannotPayFailsTheModelStep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	wf := b.create(t, `
name: Summary
trigger: {type: manual}
steps:
  - {id: summary, type: agent_prompt, model: alpha-haiku-4-5, prompt: Summarize}
`)
	_, err := b.st.AddCredit(ctx, b.ws.Name, -b.balance(t))
	require.NoError(t, err)
	r := b.start(t, wf, nil)
	require.True(t, b.advance(t, b.svc, r).IsZero())
	got := b.run(t, r)
	require.Equal(t, workflows.RunFailed, got.Status)
	require.Contains(t, *got.Error, "insufficient_quota")
	require.Contains(t, *got.Error, "no credit left")
	require.Empty(t, b.vendor.Requests(), "no model call was made")
	require.Equal(t, 0, b.eventCount(t, "spend.recorded"))
}

func TestEventTriggersStartOneRunPerMatchingEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	// An event before the workflow exists starts nothing.
	_, err := b.st.AppendEvents(ctx, b.ws.ID, []store.NewEvent{{Type: "conversation.created", Data: map[string]any{"conversation_id": "mc-old", "channel": "sms"}}})
	require.NoError(t, err)
	wf := b.create(t, `
name: SMS openers
trigger:
  type: event
  event: conversation.created
  condition: event.data.channel == "sms"
steps:
  - {id: pause, type: wait, duration: 1m}
`)
	_, err = b.st.AppendEvents(ctx, b.ws.ID, []store.NewEvent{
		{Type: "conversation.created", Data: map[string]any{"conversation_id": "mc-a", "channel": "sms"}},
		{Type: "conversation.created", Data: map[string]any{"conversation_id": "mc-b", "channel": "webchat"}},
		{Type: "turn.completed", Data: map[string]any{"conversation_id": "mc-a"}},
		{Type: "conversation.created", Data: map[string]any{"conversation_id": "mc-c", "channel": "sms"}},
	})
	require.NoError(t, err)
	n, err := b.svc.Tick(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = b.svc.Tick(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a second tick starts nothing again")
	runs, err := b.svc.Runs(ctx, b.ws.ID, wf.ID)
	require.NoError(t, err)
	require.Len(t, runs.Data, 2)
	for _, r := range runs.Data {
		require.Equal(t, workflows.TriggerEvent, r.Trigger["type"])
		require.True(t, strings.HasPrefix(r.Trigger["event_id"].(string), "evt_"))
	}
	// A disabled workflow starts nothing; enabled again, it starts on events after that.
	off := false
	_, err = b.svc.Update(ctx, b.ws.ID, wf.ID, workflows.Input{Enabled: &off})
	require.NoError(t, err)
	_, err = b.st.AppendEvents(ctx, b.ws.ID, []store.NewEvent{{Type: "conversation.created", Data: map[string]any{"conversation_id": "mc-d", "channel": "sms"}}})
	require.NoError(t, err)
	n, err = b.svc.Tick(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	on := true
	_, err = b.svc.Update(ctx, b.ws.ID, wf.ID, workflows.Input{Enabled: &on})
	require.NoError(t, err)
	n, err = b.svc.Tick(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "events from while it was off are not replayed")
}

func TestScheduleTriggersFireOncePerTimeInTheirZone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.clock.Set(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)) // 7:00 in Paris
	wf := b.create(t, `
name: Digest
trigger: {type: schedule, cron: "0 8 * * *", timezone: Europe/Paris}
steps:
  - {id: pause, type: wait, duration: 1m}
`)
	require.Equal(t, time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC), *wf.Trigger.NextRunAt)
	n, err := b.svc.Tick(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	b.clock.Set(time.Date(2026, 11, 27, 7, 0, 30, 0, time.UTC))
	n, err = b.svc.Tick(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = b.svc.Tick(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	got, err := b.svc.Get(ctx, b.ws.ID, wf.ID)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC), *got.Trigger.NextRunAt)
	runs, err := b.svc.Runs(ctx, b.ws.ID, wf.ID)
	require.NoError(t, err)
	require.Len(t, runs.Data, 1)
	raw, _ := json.Marshal(runs.Data[0].Trigger)
	require.JSONEq(t, `{"type":"schedule","scheduled_at":"2026-11-27T07:00:00Z"}`, string(raw))
}
