package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"switchboard/store"
)

// WriteBehind commits the spend of ephemeral turns (chat completions without a conversation,
// responses with store:false) after they have answered: a turn hands over its charge and its
// events, answers at once, and a per-process committer writes everything handed over within
// Interval in one transaction (one fsync for the batch instead of one per turn).
//
// What that costs, and what bounds it:
//   - a crash (SIGKILL, power loss) loses at most the spend handed over since the last flush:
//     one Interval of ephemeral spend. Stored turns never go through here: their 200 still
//     means durable.
//   - a SIGTERM drain loses nothing: Close flushes after the last request has answered.
//   - the balance check (Pending) counts this process's spend not yet written, so a workspace
//     cannot overspend by more than its turns in flight, as with synchronous commits.
//   - the events (turn.completed, spend.recorded) get their cursors at the flush, at most
//     Interval later than the answer.
type WriteBehind struct {
	store    *store.Store
	log      *slog.Logger
	interval time.Duration

	mu      sync.Mutex
	queue   []*deferredSpend
	pending map[uuid.UUID]int64 // spend handed over and not yet committed, per workspace
	closed  bool
	kick    chan struct{}
	done    chan struct{}
	flushMu sync.Mutex // one flush at a time
}

// deferredSpend is what an ephemeral turn leaves to commit.
type deferredSpend struct {
	workspaceID uuid.UUID
	out         Outcome
	events      []store.NewEvent
}

// retryAfter is how long a failed flush waits before it tries again.
const retryAfter = time.Second

// maxQueued bounds the turns waiting for a flush: past it (the database is slower than the
// turns), a turn commits its own spend before it answers, so the loss window and memory stay
// bounded and the turns slow down to what the database takes.
const maxQueued = 4096

// settle writes a batch in tx: per workspace, in the order the turns answered, one row
// update, one cursor range, one pipelined batch of rows (Tx.SettleWorkspaces, which locks the
// workspace rows in id order, as the group commit of stored turns does).
func settle(ctx context.Context, tx *store.Tx, batch []*deferredSpend) error {
	var order []uuid.UUID
	byWS := map[uuid.UUID][]store.Settlement{}
	for _, d := range batch {
		if _, ok := byWS[d.workspaceID]; !ok {
			order = append(order, d.workspaceID)
		}
		byWS[d.workspaceID] = append(byWS[d.workspaceID], settlementOf(d))
	}
	slices.SortFunc(order, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	items := make([][]store.Settlement, len(order))
	for i, ws := range order {
		items[i] = byWS[ws]
	}
	return tx.SettleWorkspaces(ctx, order, items)
}

// settlementOf is what Pipeline.settle would write for the turn.
func settlementOf(d *deferredSpend) store.Settlement {
	charge := chargeOf(&d.out)
	all := append([]store.NewEvent(nil), d.events...)
	if charge != nil {
		all = append(all, spendAfterCharge(&d.out))
	}
	return store.Settlement{Charge: charge, Events: all}
}

// NewWriteBehind starts the committer of p's ephemeral turns, flushing at most interval after
// a turn handed its spend over. Close it (it flushes) when the process stops.
func NewWriteBehind(p *Pipeline, interval time.Duration) *WriteBehind {
	w := &WriteBehind{store: p.store, log: p.log, interval: interval, pending: map[uuid.UUID]int64{},
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	p.writeBehind = w
	go w.run()
	return w
}

// Pending is the spend of workspaceID handed over by this process and not yet committed: the
// balance check subtracts it.
func (w *WriteBehind) Pending(workspaceID uuid.UUID) int64 {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pending[workspaceID]
}

// add hands a turn's spend over; false when the committer is closed (the caller commits it
// itself).
func (w *WriteBehind) add(d *deferredSpend) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.queue) >= maxQueued {
		return false
	}
	w.queue = append(w.queue, d)
	w.pending[d.workspaceID] += d.out.CostNanoUSD
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return true
}

func (w *WriteBehind) run() {
	defer close(w.done)
	for range w.kick {
		// The first turn of a batch waits at most interval; everything arriving meanwhile
		// joins it.
		time.Sleep(w.interval)
		for w.flush(context.Background()) != nil {
			if w.isClosed() {
				return // Close flushes what is left
			}
			time.Sleep(retryAfter)
		}
	}
}

func (w *WriteBehind) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// flush commits everything handed over so far, in one transaction. If that fails, each turn
// is tried alone, so one bad entry (its workspace deleted meanwhile) does not hold the others;
// what still fails for another reason (the database unreachable) stays queued.
func (w *WriteBehind) flush(ctx context.Context) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.mu.Lock()
	batch := w.queue
	w.queue = nil
	w.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := w.settle(ctx, batch)
	if err == nil {
		w.committed(batch)
		return nil
	}
	var left []*deferredSpend
	for _, d := range batch {
		err := w.settle(ctx, []*deferredSpend{d})
		switch {
		case err == nil:
			w.committed([]*deferredSpend{d})
		case errors.Is(err, store.ErrNotFound):
			w.log.Error("dropping the spend of an ephemeral turn: its workspace is gone",
				slog.String("workspace_id", d.workspaceID.String()), slog.Int64("cost_nano_usd", d.out.CostNanoUSD))
			w.committed([]*deferredSpend{d})
		default:
			left = append(left, d)
		}
	}
	if len(left) == 0 {
		return nil
	}
	w.log.Error("committing the spend of ephemeral turns failed; retrying", slog.Int("turns", len(left)), slog.String("error", err.Error()))
	w.mu.Lock()
	w.queue = append(left, w.queue...)
	w.mu.Unlock()
	return err
}

// settle commits the batch in a pipelined transaction (store.Pipelined: one round trip, the
// settlement with COMMIT, so the workspace row is held for no round trip), then announces
// its events.
func (w *WriteBehind) settle(ctx context.Context, batch []*deferredSpend) error {
	announce, err := w.store.Pipelined(ctx, func(tx *store.Tx) error { return settle(ctx, tx, batch) })
	if err == nil {
		announce()
	}
	return err
}

func (w *WriteBehind) committed(batch []*deferredSpend) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range batch {
		if w.pending[d.workspaceID] -= d.out.CostNanoUSD; w.pending[d.workspaceID] <= 0 {
			delete(w.pending, d.workspaceID)
		}
	}
}

// Close stops taking spend (later turns commit their own) and flushes what was handed over,
// trying until ctx ends. Call it after the HTTP server has drained.
func (w *WriteBehind) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.kick)
	}
	w.mu.Unlock()
	for {
		err := w.flush(context.WithoutCancel(ctx))
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			w.mu.Lock()
			n := len(w.queue)
			w.mu.Unlock()
			w.log.Error("stopping with the spend of ephemeral turns uncommitted", slog.Int("turns", n), slog.String("error", err.Error()))
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
