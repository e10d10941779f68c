package channels

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"switchboard/store"
)

// The inbox: an SMS webhook stores its message with a row in channel_inbox in one autocommit
// statement (store.RecordInboundQueued) and answers the carrier; the replica that took it
// then inserts the reply jobs of the messages queued meanwhile in one transaction
// (RunInbox). A webhook therefore costs one round trip and one WAL flush, however many
// replies are in flight, instead of a transaction of four statements whose River insert
// waited on the same CPUs as the replies (docs/benchmarks.md, "Two-way SMS under load",
// 2026-12-02). The message is durable before the carrier is answered; its job is inserted
// within milliseconds, or, if the replica dies first, by any replica's sweep within
// inboxStaleAfter; taking the row and inserting the job are one transaction, so each message
// gets one job.

const (
	// inboxBatch bounds the messages whose jobs one transaction inserts.
	inboxBatch = 500
	// inboxStaleAfter is how long a row waits for its own replica before any replica's sweep
	// takes it: long enough that a live replica always takes its own first.
	inboxStaleAfter = 2 * time.Second
	// inboxSweepEvery is how often a replica looks for rows left by one that died.
	inboxSweepEvery = time.Second
)

// queued hands a message stored in the inbox to this replica's RunInbox. A full queue drops
// it: the sweep takes it.
func (s *Service) queued(id uuid.UUID) {
	select {
	case s.inbox <- id:
	default:
	}
}

// RunInbox inserts the reply jobs of the messages this replica stored, in batches, and sweeps
// up rows left by replicas that died, until ctx ends.
func (s *Service) RunInbox(ctx context.Context) {
	sweep := time.NewTicker(inboxSweepEvery)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-s.inbox:
			ids := s.drainInbox([]uuid.UUID{id})
			s.enqueue(ctx, func(tx *store.Tx) ([]store.Queued, error) { return tx.TakeInbox(ctx, ids) })
		case <-sweep.C:
			s.enqueue(ctx, func(tx *store.Tx) ([]store.Queued, error) {
				return tx.TakeStaleInbox(ctx, time.Now().Add(-inboxStaleAfter), inboxBatch)
			})
		}
	}
}

// drainInbox adds to ids what the queue holds, up to a batch.
func (s *Service) drainInbox(ids []uuid.UUID) []uuid.UUID {
	for len(ids) < inboxBatch {
		select {
		case id := <-s.inbox:
			ids = append(ids, id)
		default:
			return ids
		}
	}
	return ids
}

// enqueue takes inbox rows and inserts their reply jobs in one transaction. A failure leaves
// the rows for the sweep.
func (s *Service) enqueue(ctx context.Context, take func(*store.Tx) ([]store.Queued, error)) {
	n := 0
	err := s.hooks.InTx(ctx, func(tx *store.Tx) error {
		queued, err := take(tx)
		if err != nil || len(queued) == 0 {
			return err
		}
		params := make([]river.InsertManyParams, len(queued))
		for i, q := range queued {
			params[i] = river.InsertManyParams{Args: ReplyArgs{WorkspaceID: q.WorkspaceID, MessageID: q.MessageID}}
		}
		n = len(params)
		_, err = s.jobs.InsertManyTx(ctx, tx.Pgx(), params)
		return err
	})
	if err != nil && ctx.Err() == nil {
		s.log.Warn("inserting the reply jobs of inbound messages (the sweep tries again)", slog.Int("messages", n), slog.String("error", err.Error()))
	}
}
