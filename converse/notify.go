package converse

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"switchboard/mailer"
)

// NotifyArgs is the durable job of emailing a handoff summary to an agent's
// notification_email. It is inserted in the transaction that records the escalation, so a
// committed escalation is always announced, and River retries a failed send.
type NotifyArgs struct {
	WorkspaceID uuid.UUID `json:"workspace_id"`
	To          string    `json:"to"`
	Subject     string    `json:"subject"`
	Body        string    `json:"body"`
}

// Kind names the job.
func (NotifyArgs) Kind() string { return "agent_notification_email" }

// InsertOpts gives a failing mail server a few tries over about an hour, not River's default
// three weeks.
func (NotifyArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 8} }

// Notifier works NotifyArgs jobs.
type Notifier struct {
	river.WorkerDefaults[NotifyArgs]
	mail *mailer.Sender
}

// NewNotifier returns the worker; a nil sender (no SMTP_URL) fails each job, which River
// retries and then discards, with the error in the job's record.
func NewNotifier(mail *mailer.Sender) *Notifier { return &Notifier{mail: mail} }

// Timeout bounds one attempt.
func (n *Notifier) Timeout(*river.Job[NotifyArgs]) time.Duration { return time.Minute }

// Work sends the email.
func (n *Notifier) Work(ctx context.Context, job *river.Job[NotifyArgs]) error {
	a := job.Args
	return n.mail.Send(ctx, mailer.Message{To: []string{a.To}, Subject: a.Subject, Body: a.Body})
}
