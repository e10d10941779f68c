package channels

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/google/uuid"

	"switchboard/store"
)

// finish records the carrier's answer to a send (its id, or its refusal) on a message still
// `sending`, applies the delivery reports that came first, and charges it once accepted. A
// message that moved on meanwhile (a rerun resolved it first) is left as it is, and not
// charged again.
//
// The records of concurrent sends are committed together (finishBatch): one transaction, one
// fsync and one lock of each workspace's row (store.Tx.SettleWorkspaces) for the batch,
// instead of one each per reply. It returns once its own record is durable.
func (s *Service) finish(ctx context.Context, c store.Channel, reply store.ChannelMessage, id string, sendErr error) error {
	if sendErr != nil {
		s.log.WarnContext(ctx, "the carrier refused a reply", slog.String("channel", c.ID.String()), slog.String("error", sendErr.Error()))
	}
	return s.finishes.do(&finishing{c: c, reply: reply, id: id, sendErr: sendErr}, s.commitFinishes)
}

// finishing is one send's record waiting for its batch.
type finishing struct {
	c       store.Channel
	reply   store.ChannelMessage
	id      string
	sendErr error

	err  error
	done chan struct{}
}

// finishBatch commits records in batches without a timer: the first to arrive while no batch
// commits commits every record queued by then (its own included); those arriving meanwhile
// wait, and the next of them to find no batch committing takes them all. Alone, a record
// commits at once; under load the batches grow with the commit's latency.
type finishBatch struct {
	mu         sync.Mutex
	queue      []*finishing
	committing bool
}

// do queues f and returns once its batch committed (or failed), with its outcome.
func (b *finishBatch) do(f *finishing, commit func([]*finishing)) error {
	f.done = make(chan struct{})
	b.mu.Lock()
	b.queue = append(b.queue, f)
	if b.committing {
		b.mu.Unlock()
		<-f.done
		return f.err
	}
	b.committing = true
	batch := b.queue
	b.queue = nil
	b.mu.Unlock()
	commit(batch)
	b.mu.Lock()
	b.committing = false
	if len(b.queue) > 0 {
		// Those that queued meanwhile are committed by a goroutine of their own: this
		// record's job goes on.
		b.committing = true
		next := b.queue
		b.queue = nil
		go b.drain(next, commit)
	}
	b.mu.Unlock()
	<-f.done
	return f.err
}

// drain commits batch, then whatever queued meanwhile, until nothing waits.
func (b *finishBatch) drain(batch []*finishing, commit func([]*finishing)) {
	for {
		commit(batch)
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.committing = false
			b.mu.Unlock()
			return
		}
		batch = b.queue
		b.queue = nil
		b.mu.Unlock()
	}
}

// commitFinishes writes a batch in one transaction and wakes its records; if that fails,
// each is written again alone, so one record's failure fails only that record. The carrier
// has answered: it is recorded even if the job that sent it is being cancelled.
func (s *Service) commitFinishes(batch []*finishing) {
	ctx := context.Background()
	err := s.store.InTx(ctx, func(tx *store.Tx) error { return s.writeFinishes(ctx, tx, batch) })
	if err == nil || len(batch) == 1 {
		for _, f := range batch {
			f.err = err
			close(f.done)
		}
		return
	}
	s.log.Warn("recording a batch of sends failed; recording them one by one", slog.Int("sends", len(batch)), slog.String("error", err.Error()))
	for _, f := range batch {
		f.err = s.store.InTx(ctx, func(tx *store.Tx) error { return s.writeFinishes(ctx, tx, []*finishing{f}) })
		close(f.done)
	}
}

// writeFinishes records each send of the batch, then settles the charges of those the
// carrier accepted, per workspace in id order (as the turns' group commit does), last.
func (s *Service) writeFinishes(ctx context.Context, tx *store.Tx, batch []*finishing) error {
	var workspaces []uuid.UUID
	byWS := map[uuid.UUID][]store.Settlement{}
	for _, f := range batch {
		items, err := s.writeFinish(ctx, tx, f)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			continue
		}
		ws := f.c.WorkspaceID
		if _, ok := byWS[ws]; !ok {
			workspaces = append(workspaces, ws)
		}
		byWS[ws] = append(byWS[ws], items...)
	}
	if len(workspaces) == 0 {
		return nil
	}
	slices.SortFunc(workspaces, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	items := make([][]store.Settlement, len(workspaces))
	for i, ws := range workspaces {
		items[i] = byWS[ws]
	}
	return tx.SettleWorkspaces(ctx, workspaces, items)
}

// writeFinish records one send and returns its charge, to settle with the batch's.
func (s *Service) writeFinish(ctx context.Context, tx *store.Tx, f *finishing) ([]store.Settlement, error) {
	c, reply := f.c, f.reply
	if f.sendErr != nil {
		_, _, err := tx.FinishOutbound(ctx, c.WorkspaceID, reply.ID, "sending", "failed", ptr(publicMessage(f.sendErr)), nil)
		return nil, err
	}
	short, recorded, err := tx.FinishOutbound(ctx, c.WorkspaceID, reply.ID, "sending", "queued", nil, &f.id)
	if err != nil || !recorded {
		return nil, err
	}
	if err := tx.ApplyEarlyReports(ctx, c.WorkspaceID, c.ID, f.id); err != nil {
		return nil, err
	}
	var conv uuid.UUID
	if reply.ConversationID != nil && short != "" {
		conv = *reply.ConversationID // its short id came with the finish
	}
	fctx, fl := foldCharges(ctx, conv, short)
	if err := s.charge(fctx, tx, c, Metered{Remote: reply.Remote, Body: reply.Body, Direction: "outbound", ConversationID: reply.ConversationID}); err != nil {
		return nil, err
	}
	return fl.items, nil
}
