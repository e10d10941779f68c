package channels

import (
	"context"
	"log/slog"

	"switchboard/store"
)

// reportDelivery applies a carrier's or an app's delivery report. Concurrent reports are
// committed together (batcher): each was an autocommit write with a WAL flush of its own,
// as many a second as replies, and under load their flushes queued with the inbound
// messages' on the WAL's write lock (docs/benchmarks.md, "Two-way SMS under load",
// 2026-12-02). It returns once its report is durable.
func (s *Service) reportDelivery(ctx context.Context, d store.Delivery) error {
	return s.reported.do(d, s.commitReports)
}

// commitReports applies a batch in one transaction. A report whose message is not known yet
// is then passed to ReportDelivery alone, which keeps it for the send to apply (or applies
// it once the send's record commits); if the batch fails (a deadlock with another replica's
// batch, say), each is applied alone.
func (s *Service) commitReports(batch []*batched[store.Delivery]) {
	ctx := context.Background() // the carrier has said it: recorded even if its request ends
	reports := make([]store.Delivery, len(batch))
	for i, b := range batch {
		reports[i] = b.v
	}
	var known []bool
	err := s.reports.InTx(ctx, func(tx *store.Tx) (err error) {
		known, err = tx.ReportDeliveries(ctx, reports)
		return err
	})
	if err != nil && len(batch) > 1 {
		s.log.Warn("applying a batch of delivery reports failed; applying them one by one", slog.Int("reports", len(batch)), slog.String("error", err.Error()))
	}
	for i, b := range batch {
		switch {
		case err == nil && known[i]:
			b.finish(nil)
		case err != nil && len(batch) == 1:
			b.finish(err)
		default:
			// Alone, and not in this goroutine: an unknown report may wait for its send's
			// record to commit (LockDeliveryReports), and the next batch must not wait with it.
			go func(d store.Delivery) {
				b.finish(s.reports.ReportDelivery(ctx, d.WorkspaceID, d.ChannelID, d.ProviderID, d.Status, d.Reason))
			}(b.v)
		}
	}
}
