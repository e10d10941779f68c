package inbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"switchboard/converse"
	"switchboard/store"
)

// DefaultNotifyAfter is how long an escalated conversation waits unclaimed before the people
// who opted in are emailed, unless the workspace says otherwise (PATCH /api/inbox/settings).
const DefaultNotifyAfter = 2 * time.Minute

// UnclaimedArgs is the periodic sweep that emails the people who opted in about the
// escalated conversations nobody claimed in time, once per conversation.
type UnclaimedArgs struct{}

// Kind names the job.
func (UnclaimedArgs) Kind() string { return "inbox_unclaimed_sweep" }

// PeriodicJobs is the sweep, every period.
func (s *Service) PeriodicJobs(period time.Duration) []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(period),
		func() (river.JobArgs, *river.InsertOpts) { return UnclaimedArgs{}, nil }, &river.PeriodicJobOpts{ID: "inbox_unclaimed_sweep"})}
}

// UnclaimedWorker works UnclaimedArgs.
type UnclaimedWorker struct {
	river.WorkerDefaults[UnclaimedArgs]
	s *Service
}

// NewUnclaimedWorker is the sweep's worker.
func NewUnclaimedWorker(s *Service) *UnclaimedWorker { return &UnclaimedWorker{s: s} }

// Work runs one sweep.
func (w *UnclaimedWorker) Work(ctx context.Context, _ *river.Job[UnclaimedArgs]) error {
	return w.s.SweepUnclaimed(ctx)
}

// SweepUnclaimed marks the conversations that waited too long as notified and queues one
// email per person who opted in, in one transaction: each conversation is announced once,
// and an announcement marked is an email queued (the mail job retries a failing server).
func (s *Service) SweepUnclaimed(ctx context.Context) error {
	now := s.now()
	return s.store.InTx(ctx, func(tx *store.Tx) error {
		waiting, err := tx.ClaimUnclaimedNotices(ctx, now)
		if err != nil {
			return err
		}
		for _, c := range waiting {
			to, err := tx.UnclaimedSubscribers(ctx, c.WorkspaceID)
			if err != nil {
				return err
			}
			subject, body := s.unclaimedMail(c, now)
			for _, addr := range to {
				args := converse.NotifyArgs{WorkspaceID: c.WorkspaceID, To: addr, Subject: subject, Body: body}
				if _, err := s.jobs.InsertTx(ctx, tx.Pgx(), args, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (s *Service) unclaimedMail(c store.UnclaimedConversation, now time.Time) (string, string) {
	waited := "a while"
	if c.EscalatedAt != nil {
		waited = now.Sub(*c.EscalatedAt).Round(time.Minute).String()
		waited = strings.TrimSuffix(waited, "0s")
	}
	subject := fmt.Sprintf("A conversation waits for a person: %s (%s)", c.ShortID, c.WorkspaceName)
	var b strings.Builder
	fmt.Fprintf(&b, "The conversation %s has waited %s for someone of %s to take it over.\n", c.ShortID, waited, c.WorkspaceName)
	if c.EscalationTrigger != nil {
		fmt.Fprintf(&b, "It escalated on: %s.\n", *c.EscalationTrigger)
	}
	if s.publicURL != "" {
		fmt.Fprintf(&b, "\nTake it over: %s/dashboard/inbox?c=%s\n", s.publicURL, c.ShortID)
	}
	if c.EscalationSummary != nil {
		fmt.Fprintf(&b, "\n%s", *c.EscalationSummary)
	}
	b.WriteString("\nYou get this email because you opted in to unclaimed-conversation emails (dashboard, Inbox).\n")
	return subject, b.String()
}
