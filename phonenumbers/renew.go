package phonenumbers

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"switchboard/money"
	"switchboard/store"
)

// Renewals: the first month of a number is charged at purchase and paid_through is the end
// of the month paid. Every RenewalInterval the renewal job charges each active number whose
// paid_through has passed its monthly price for the next month. The month is recorded in
// phone_number_renewals, unique per number and period start, in the transaction that
// charges it and moves paid_through on, under a lock of the number's row: a month is charged
// once, whatever the replicas, restarts and racing jobs.
//
// A month the workspace cannot pay (its balance does not cover the price, or the charge would
// pass its monthly spend cap) is not charged; the number keeps working, renewal_failed_at
// says since when, and the next run tries again. Suspension alone does not stop a renewal:
// keeping a number is not work, and a lost number cannot be bought back. A month still unpaid
// RenewalGrace after paid_through releases the number at the provider (status released,
// release_reason unpaid). The contract has no event for that, so none is written.
const (
	RenewalInterval = time.Hour
	RenewalGrace    = 72 * time.Hour
	// renewalBatch is how many due numbers one query reads.
	renewalBatch = 500
	// maxCatchUp bounds the months one run charges a number that is behind (a server that
	// was down): each is its own charge and event.
	maxCatchUp = 24
)

// RenewArgs is the periodic renewal job.
type RenewArgs struct{}

// Kind names the job.
func (RenewArgs) Kind() string { return "phone_number_renewals" }

// InsertOpts keeps one renewal run queued at a time.
func (RenewArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}}}
}

// PeriodicJobs are the jobs of this package River's leader inserts on a schedule: the
// renewals, every RenewalInterval and at start.
func (s *Service) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(RenewalInterval),
		func() (river.JobArgs, *river.InsertOpts) { return RenewArgs{}, nil }, &river.PeriodicJobOpts{ID: "phone_number_renewals", RunOnStart: true})}
}

// RenewWorker works RenewArgs.
type RenewWorker struct {
	river.WorkerDefaults[RenewArgs]
	s *Service
}

// RenewWorker is the renewal job's worker.
func (s *Service) RenewWorker() *RenewWorker { return &RenewWorker{s: s} }

// Work renews every due number; one that fails (the provider, on a release) does not stop
// the others, and its error retries the job.
func (w *RenewWorker) Work(ctx context.Context, _ *river.Job[RenewArgs]) error {
	now := time.Now()
	var errs []error
	var after store.DuePhoneNumber
	for {
		// Pages in (paid_through, id) order: numbers left unpaid (in their grace period)
		// do not hold back the ones after them.
		due, err := w.s.store.DuePhoneNumbers(ctx, now, after, renewalBatch)
		if err != nil {
			return err
		}
		for _, d := range due {
			if err := w.s.Renew(ctx, d.WorkspaceID, d.ID, now); err != nil {
				w.s.log.ErrorContext(ctx, "renewing a phone number", slog.String("phone_number_id", d.ID.String()), slog.String("error", err.Error()))
				errs = append(errs, err)
			}
		}
		if len(due) < renewalBatch {
			return errors.Join(errs...)
		}
		after = due[len(due)-1]
	}
}

// Renew charges the months of a number that ended by now, or releases it when a month has
// been unpaid for the grace period.
func (s *Service) Renew(ctx context.Context, ws, id uuid.UUID, now time.Time) error {
	for range maxCatchUp {
		charged, err := s.renewOnce(ctx, ws, id, now)
		if err != nil || !charged {
			return err
		}
	}
	return nil
}

// renewOnce charges one due month of the number, if the workspace can pay, or releases the
// number when its unpaid month is past the grace period.
func (s *Service) renewOnce(ctx context.Context, ws, id uuid.UUID, now time.Time) (charged bool, err error) {
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		n, err := tx.LockPhoneNumber(ctx, ws, id)
		if err != nil {
			return err
		}
		if n.Status != "active" || n.PaidThrough.After(now) {
			return nil
		}
		cost := int64(n.MonthlyPriceCredits) * NanoUSDPerCredit
		w, err := tx.WorkspaceByID(ctx, ws)
		if err != nil {
			return err
		}
		if !canPay(w, cost) {
			if !now.Before(n.PaidThrough.Add(RenewalGrace)) {
				// Released at the provider under the row's lock: a racing run waits, then
				// finds it released. A provider failure rolls back; the next run tries again.
				if err := s.provider.Release(ctx, n.ProviderSid); err != nil {
					return err
				}
				_, err := tx.LapsePhoneNumber(ctx, ws, id)
				return err
			}
			return tx.MarkPhoneNumberRenewalFailed(ctx, ws, id)
		}
		start, end := n.PaidThrough, nextMonth(n.PaidThrough)
		ok, err := tx.RenewPhoneNumber(ctx, ws, id, start, end, n.MonthlyPriceCredits)
		if err != nil || !ok {
			return err
		}
		charged = true
		_, _, err = tx.Settle(ctx, ws, &store.Charge{AmountNanoUSD: cost, Category: "phone_number"}, func(balance int64) []store.NewEvent {
			return []store.NewEvent{{Type: "spend.recorded", Data: map[string]any{"amount_usd": json.Number(money.FormatUSD(cost)),
				"category": "phone_number", "balance_usd": json.Number(money.FormatUSD(balance)), "renewal": true,
				"phone_number": n.E164, "phone_number_id": n.ID.String(), "credits": n.MonthlyPriceCredits,
				"period_start": start.UTC().Format(time.RFC3339), "period_end": end.UTC().Format(time.RFC3339)}}}
		})
		return err
	})
	return charged, err
}

// canPay reports whether the workspace can pay cost now: its balance covers it and it stays
// within its monthly spend cap (as at purchase).
func canPay(w store.Workspace, cost int64) bool {
	return w.BalanceNanoUSD >= cost && (w.MonthlyCapNanoUSD == nil || w.MonthSpendNanoUSD+cost <= *w.MonthlyCapNanoUSD)
}

// nextMonth is t a calendar month later (UTC), on the same day or, when the next month is
// shorter, its last day (as PostgreSQL adds a month).
func nextMonth(t time.Time) time.Time {
	t = t.UTC()
	y, m, d := t.Date()
	first := time.Date(y, m+1, 1, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	last := first.AddDate(0, 1, -1).Day()
	return first.AddDate(0, 0, min(d, last)-1)
}
