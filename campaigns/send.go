package campaigns

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"switchboard/blueprint"
	"switchboard/contacts"
	"switchboard/llm"
	"switchboard/manage"
	"switchboard/quota"
	"switchboard/sms"
	"switchboard/store"
)

// TickArgs is the sending job of a campaign. One job per campaign lives at a time (unique
// by its arguments): it sends a period's worth of messages, then snoozes for the next.
type TickArgs struct {
	WorkspaceID uuid.UUID `json:"workspace_id"`
	CampaignID  uuid.UUID `json:"campaign_id"`
}

// Kind names the job.
func (TickArgs) Kind() string { return "campaign_tick" }

// InsertOpts keeps one live sending job per campaign: starting a paused campaign whose job
// is still snoozing reuses that job. A finished job does not count (a campaign paused and
// started again gets a new one).
func (TickArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}}}
}

// SweepArgs is the periodic job that makes sure every scheduled and running campaign has its
// sending job (one can be missing when a start raced the end of the previous job).
type SweepArgs struct{}

// Kind names the job.
func (SweepArgs) Kind() string { return "campaign_sweep" }

// InsertOpts keeps one sweep at a time.
func (SweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}}}
}

// PeriodicJobs are the campaign jobs River's leader inserts on a schedule: the sweep, each
// period.
func (s *Service) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(s.cfg.Period),
		func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil }, &river.PeriodicJobOpts{ID: "campaign_sweep"})}
}

// SweepWorker works SweepArgs.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	s *Service
}

// NewSweepWorker is the sweep's worker.
func NewSweepWorker(s *Service) *SweepWorker { return &SweepWorker{s: s} }

// Work queues a sending job for each active campaign (the unique options skip those that
// have one).
func (w *SweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	active, err := w.s.store.ActiveCampaigns(ctx)
	if err != nil {
		return err
	}
	for _, c := range active {
		if _, err := w.s.jobs.Insert(ctx, TickArgs{WorkspaceID: c.WorkspaceID, CampaignID: c.ID}, nil); err != nil {
			return err
		}
	}
	return nil
}

// Worker works TickArgs.
type Worker struct {
	river.WorkerDefaults[TickArgs]
	s   *Service
	log *slog.Logger
}

// NewWorker is the sending worker of the service.
func NewWorker(s *Service, log *slog.Logger) *Worker { return &Worker{s: s, log: log} }

// Timeout bounds one tick: a period of sends with room for a slow provider.
func (w *Worker) Timeout(*river.Job[TickArgs]) time.Duration { return w.s.cfg.Period + 5*time.Minute }

// skipBatch is how many contacts a tick looks at in one query.
const skipBatch = 100

// Work sends up to rate_per_minute messages of a running campaign, then snoozes for the
// next period; a scheduled campaign waits for its start, one outside its window for the
// window to open. It returns (and the job ends) once the campaign is not running: paused,
// cancelled, completed, or deleted.
func (w *Worker) Work(ctx context.Context, job *river.Job[TickArgs]) error {
	s, ws := w.s, job.Args.WorkspaceID
	c, err := s.store.CampaignByID(ctx, ws, job.Args.CampaignID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	now := s.cfg.Now()
	switch c.Status {
	case Scheduled:
		if c.StartAt != nil && c.StartAt.After(now) {
			// At most a period: a PATCH may move start_at earlier.
			return river.JobSnooze(min(c.StartAt.Sub(now), s.cfg.Period))
		}
		if c, err = s.setStatusIf(ctx, c, Scheduled, Running, nil); err != nil || c.Status != Running {
			return err
		}
	case Running:
	default:
		return nil
	}
	if c.AgentID == nil {
		return w.pause(ctx, c, "agent_missing")
	}
	a, err := s.store.AgentByID(ctx, ws, *c.AgentID)
	if errors.Is(err, store.ErrNotFound) {
		return w.pause(ctx, c, "agent_missing")
	}
	if err != nil {
		return err
	}
	if a.Status != string(manage.AgentEnabled) {
		return w.pause(ctx, c, "agent_disabled")
	}
	voice, err := s.isVoice(ctx, c)
	if err != nil {
		return err
	}
	// A voice campaign's window is each contact's own (voice.go); others have one window.
	if wait := untilWindow(c, now); wait > 0 && !voice {
		return river.JobSnooze(min(wait, s.cfg.Period))
	}
	var from sender
	err = s.store.InTx(ctx, func(tx *store.Tx) error { from, err = origin(ctx, tx, c); return err })
	if err != nil {
		return w.pause(ctx, c, "no_sending_number")
	}
	var aud Audience
	if err := json.Unmarshal(c.Audience, &aud); err != nil {
		return err
	}
	sent, deadline := 0, now.Add(s.cfg.Period)
	// Contacts of a voice campaign outside their window this tick, and the soonest one opens.
	var deferred []uuid.UUID
	reopens := time.Duration(0)
	for sent < c.RatePerMinute && s.cfg.Now().Before(deadline) {
		next, err := s.store.CampaignAudienceNext(ctx, ws, c.ID, aud.ContactIDs, aud.ListIDs, aud.Tags, deferred, min(skipBatch, c.RatePerMinute-sent))
		if err != nil {
			return err
		}
		if len(next) == 0 && len(deferred) > 0 {
			// Everyone else is decided: wait for the first deferred contact's window.
			return river.JobSnooze(max(min(reopens, s.cfg.Period), time.Millisecond))
		}
		if len(next) == 0 {
			// Every contact is decided; the campaign completes once the sends of other
			// workers have their answer (one left by a crash stops counting after a while).
			inFlight, err := s.store.CampaignSendsInFlight(ctx, ws, c.ID, s.cfg.Period+time.Minute)
			if err != nil {
				return err
			}
			if inFlight > 0 {
				return river.JobSnooze(s.cfg.Period)
			}
			_, err = s.setStatusIf(ctx, c, Running, Completed, nil)
			return err
		}
		for _, contact := range next {
			if from.voice && contact.DeletedAt == nil && contact.ConsentCalls && contact.Phone != nil && contacts.ValidE164(*contact.Phone) {
				// Only a contact who would be called waits for its window; the others are skipped now.
				if wait := untilCallWindow(c, contact, s.cfg.Now()); wait > 0 {
					deferred = append(deferred, contact.ID)
					if reopens == 0 || wait < reopens {
						reopens = wait
					}
					continue
				}
			}
			if stop, err := w.unpaid(ctx, c); stop || err != nil {
				return err
			}
			did, err := w.decide(ctx, c, contact, from)
			if errors.Is(err, errStop) {
				return nil
			}
			if err != nil {
				return err
			}
			if did {
				sent++
			}
			if sent >= c.RatePerMinute {
				break
			}
		}
	}
	return river.JobSnooze(max(time.Until(deadline), time.Millisecond))
}

// unpaid pauses the campaign, and says to stop, when its workspace cannot pay for the next
// message (suspended, out of credit, monthly cap reached).
func (w *Worker) unpaid(ctx context.Context, c store.Campaign) (bool, error) {
	ws, err := w.s.store.WorkspaceByID(ctx, c.WorkspaceID)
	if err != nil {
		return false, err
	}
	if reason := quota.Refusal(ws); reason != "" {
		return true, w.pause(ctx, c, reason)
	}
	return false, nil
}

// pause pauses the campaign for reason and ends the job.
func (w *Worker) pause(ctx context.Context, c store.Campaign, reason string) error {
	_, err := w.s.setStatusIf(ctx, c, Running, Paused, &reason)
	return err
}

// setStatusIf moves the campaign from status from to status to, if it is still there.
func (s *Service) setStatusIf(ctx context.Context, c store.Campaign, from, to string, reason *string) (store.Campaign, error) {
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		cur, err := tx.LockCampaign(ctx, c.WorkspaceID, c.ID)
		if err != nil {
			return err
		}
		c = cur
		if cur.Status != from {
			return nil
		}
		c, err = tx.SetCampaignStatus(ctx, c.WorkspaceID, c.ID, to, reason)
		return err
	})
	return c, err
}

// decide records the decision about one contact and, for a send, messages it. It reports
// whether a message was sent (or attempted); errStop when the campaign stopped running.
func (w *Worker) decide(ctx context.Context, c store.Campaign, contact store.AudienceContact, from sender) (bool, error) {
	s, ws := w.s, c.WorkspaceID
	reason := ""
	switch {
	case contact.DeletedAt != nil:
		reason = "deleted"
	case from.voice && !contact.ConsentCalls, !from.voice && !contact.ConsentSms:
		reason = "no_consent"
	case contact.Phone == nil || !contacts.ValidE164(*contact.Phone):
		reason = "no_phone"
	}
	// On WhatsApp the person is their number without the +, and the template's parameters
	// are filled in from the contact.
	remote, channelType := "", string(blueprint.ChannelSMS)
	if from.voice {
		channelType = string(blueprint.ChannelTelcoVoice)
	}
	var tmpl Template
	if reason == "" {
		remote = *contact.Phone
		if from.app {
			remote, channelType = strings.TrimPrefix(remote, "+"), string(templateApp)
			var ok bool
			if tmpl, ok = campaignTemplate(c, contact); !ok {
				reason = "template_variable_missing"
			}
		}
	}
	var sendID, convID uuid.UUID
	var body string
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		cur, err := tx.LockCampaign(ctx, ws, c.ID)
		if err != nil {
			return err
		}
		if cur.Status != Running || cur.AgentID == nil || cur.FirstMessage == nil && !from.voice {
			return errStop // paused, cancelled, or its agent was deleted meanwhile
		}
		if reason == "" && !from.voice {
			// Carrier rules: a contact who texted STOP to this number is not messaged from it
			// until they text START (on WhatsApp: sent STOP to the business's number).
			out, err := tx.OptedOut(ctx, ws, from.number, remote)
			if err != nil {
				return err
			}
			if out {
				reason = "opted_out"
			}
		}
		if reason != "" {
			_, ok, err := tx.ClaimCampaignSend(ctx, ws, c.ID, contact.ID, "skipped", &reason, nil)
			if err != nil || !ok {
				return err
			}
			return tx.CountCampaignSend(ctx, ws, c.ID, 0, 0, 1)
		}
		conv, err := tx.CreateConversation(ctx, ws, channelType)
		if err != nil {
			return err
		}
		id, ok, err := tx.ClaimCampaignSend(ctx, ws, c.ID, contact.ID, "sending", nil, &conv.ID)
		if err != nil {
			return err
		}
		if !ok {
			return errDecided // another worker decided: roll the conversation back
		}
		sendID, convID = id, conv.ID
		if err := tx.OpenAgentConversation(ctx, ws, conv.ID, *cur.AgentID, &contact.ID, nil); err != nil {
			return err
		}
		data := map[string]any{"conversation_id": conv.ShortID, "channel": conv.Channel, "agent_id": cur.AgentID.String(),
			"contact_id": contact.ID.String(), "campaign_id": c.ID.String()}
		if from.voice {
			// The call's flow (package voice) stores what is said once someone answers.
			_, err = tx.AppendEvents(ctx, ws, []store.NewEvent{{Type: "conversation.created", Data: data}})
			return err
		}
		body = *cur.FirstMessage
		if from.channel != nil {
			// The contact's reply on this channel continues this conversation, with this agent.
			if err := tx.AddThread(ctx, ws, conv.ID, from.channel.ID, remote); err != nil {
				return err
			}
		}
		if err := tx.AppendMessages(ctx, ws, conv.ID, []store.Message{{Role: string(llm.RoleAssistant), Content: body}}); err != nil {
			return err
		}
		_, err = tx.AppendEvents(ctx, ws, []store.NewEvent{{Type: "conversation.created", Data: data}})
		return err
	})
	if errors.Is(err, errDecided) || err == nil && sendID == uuid.Nil {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// The decision is committed: whatever happens now, this contact is not messaged again.
	var providerID string
	var sendErr error
	template := false
	switch {
	case from.voice:
		providerID, sendErr = s.cfg.Calls.PlaceCall(ctx, *from.channel, remote, sendID)
	case from.app:
		providerID, template, sendErr = s.cfg.Apps.SendCampaign(ctx, *from.channel, AppMessage{To: remote, Text: body, Template: tmpl})
	default:
		out := sms.Outbound{From: from.number, To: *contact.Phone, Body: body}
		if from.channel != nil && s.cfg.StatusCallback != nil {
			out.StatusCallback = s.cfg.StatusCallback(*from.channel)
		}
		providerID, sendErr = s.sender.SendMessage(ctx, out)
	}
	status, failed, sentN := "sent", 0, 1
	var why, pid *string
	if sendErr != nil {
		status, failed, sentN = "failed", 1, 0
		msg := sendErr.Error()
		why = &msg
		w.log.WarnContext(ctx, "campaign send failed", slog.String("campaign", c.ID.String()), slog.String("error", msg))
	} else if providerID != "" {
		pid = &providerID
	}
	// The provider has its answer: record it even when the job is being cancelled, and retry
	// a failed write, since a send left `sending` stops counting only after the in-flight window.
	finish := context.WithoutCancel(ctx)
	err = retry(finish, finishAttempts, finishWithin, func() error {
		return s.store.InTx(finish, func(tx *store.Tx) error {
			// The send's conversation first (its KEY SHARE, which the charge's ledger row
			// takes anyway): an erasure of the contact locks the conversation, then the send
			// row, so taking the conversation last, after the send row, deadlocks with it.
			if err := tx.KeyShareConversations(finish, []uuid.UUID{ws}, []uuid.UUID{convID}); err != nil {
				return err
			}
			// Then the campaign row, as in the decision's transaction (then the send row,
			// then the workspace's): a worker deciding the same contact holds the campaign and
			// waits on the send row's unique key, so taking the send row first deadlocks.
			if err := tx.CountCampaignSend(finish, ws, c.ID, sentN, failed, 0); err != nil {
				return err
			}
			if err := tx.FinishCampaignSend(finish, ws, sendID, status, why, pid); err != nil {
				return err
			}
			if from.voice {
				return nil // metered per started minute when the call ends (package voice)
			}
			if pid != nil && from.channel != nil {
				// A delivery report may have come in before the carrier's id was recorded.
				if err := tx.ApplyEarlyReports(finish, ws, from.channel.ID, *pid); err != nil {
					return err
				}
			}
			if from.app {
				return s.chargeApp(finish, tx, c, *from.channel, sendID, sendErr == nil, template)
			}
			return s.chargeSend(finish, tx, c, sendID, sendErr == nil, *contact.Phone, body)
		})
	})
	return true, err
}

// Retries of recording a provider's answer: a few for an error of the write itself, and for
// as long as finishWithin while the database is out of reach, to outlast a PostgreSQL restart
// or failover (the provider has the message: a send left `sending` is neither counted nor
// charged, and holds the campaign's completion until the in-flight window has passed).
const (
	finishAttempts = 5
	finishWithin   = 2 * time.Minute
)

// retry runs fn until it succeeds, has failed attempts times with the database in reach, or
// within has passed; it waits a little longer after each failure (up to a second).
func retry(ctx context.Context, attempts int, within time.Duration, fn func() error) error {
	deadline := time.Now().Add(within)
	for i, failed := 1, 0; ; i++ {
		err := fn()
		if err == nil {
			return nil
		}
		if !store.Unavailable(err) {
			failed++
		}
		if failed >= attempts || !time.Now().Before(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(min(time.Duration(i)*50*time.Millisecond, time.Second)):
		}
	}
}

var errDecided = errors.New("already decided")

// untilWindow is how long until the campaign's sending window opens (0: it is open).
func untilWindow(c store.Campaign, now time.Time) time.Duration {
	if c.WindowStart == nil || c.WindowEnd == nil {
		return 0
	}
	loc := time.UTC
	if c.Timezone != nil {
		if l, err := time.LoadLocation(*c.Timezone); err == nil {
			loc = l
		}
	}
	return untilOpen(*c.WindowStart, *c.WindowEnd, loc, now)
}

// untilOpen is how long until the window from windowStart to windowEnd ('HH:MM' in loc; an
// end before the start spans midnight) opens (0: it is open).
func untilOpen(windowStart, windowEnd string, loc *time.Location, now time.Time) time.Duration {
	local := now.In(loc)
	start, end := minutes(windowStart), minutes(windowEnd)
	m := local.Hour()*60 + local.Minute()
	open := start < end && m >= start && m < end || start > end && (m >= start || m < end)
	if open {
		return 0
	}
	opens := time.Date(local.Year(), local.Month(), local.Day(), start/60, start%60, 0, 0, loc)
	if !opens.After(local) {
		opens = time.Date(local.Year(), local.Month(), local.Day()+1, start/60, start%60, 0, 0, loc)
	}
	return opens.Sub(now)
}

func minutes(hhmm string) int {
	if len(hhmm) != 5 {
		return 0
	}
	return int(hhmm[0]-'0')*600 + int(hhmm[1]-'0')*60 + int(hhmm[3]-'0')*10 + int(hhmm[4]-'0')
}

// campaignTemplate is the campaign's template with its parameters filled in for the contact;
// false when one comes out empty.
func campaignTemplate(c store.Campaign, contact store.AudienceContact) (Template, bool) {
	var t Template
	if err := json.Unmarshal(c.Template, &t); err != nil {
		return t, false
	}
	name := ""
	if contact.Name != nil {
		name = *contact.Name
	}
	params, ok := t.Render(name, *contact.Phone)
	t.Parameters = params
	return t, ok
}
