package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// WebhookDeliveryKind is the job kind of webhook deliveries (events.DeliveryArgs), counted
// also as deliveries.
const WebhookDeliveryKind = "webhook_delivery"

// JobMiddleware counts every job worked, by kind and outcome, with its start lag; webhook
// deliveries are counted as such too. Install it on the client that works jobs.
func (m *Metrics) JobMiddleware() rivertype.WorkerMiddleware { return &jobMiddleware{m: m} }

type jobMiddleware struct {
	river.MiddlewareDefaults
	m *Metrics
}

func (j jobMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	lag := time.Since(job.ScheduledAt)
	err := doInner(ctx)
	outcome := "ok"
	var cancel *rivertype.JobCancelError
	switch {
	case errors.As(err, &cancel):
		outcome = "cancelled"
	case err != nil:
		outcome = "error"
	}
	j.m.Job(job.Kind, outcome, lag)
	if job.Kind == WebhookDeliveryKind {
		delivery := map[string]string{"ok": "delivered", "error": "failed", "cancelled": "cancelled"}[outcome]
		j.m.WebhookDelivery(delivery, lag)
	}
	return err
}
