package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"switchboard/store"
)

// GroupCommit commits the turns that must be durable before they answer (stored responses,
// chat completions with `store: true` or a conversation, background responses, deployed
// agents' turns) in batches: a turn hands its commit unit over and waits; a per-process
// committer writes every unit handed over within the window (GROUP_COMMIT_WINDOW), or
// DefaultGroupCommitMaxBatch of them, in one transaction, and wakes each turn with its own
// result after COMMIT. A 200 still means the turn is durable; what a batch saves is the
// fsync, the round trips and the workspace-row lock of each turn:
//
//   - a batch writes all its units' rows in a few statements whatever their number
//     (writeMany): every new conversation in one INSERT, their messages in another, a
//     statement per continued conversation, every response object and Idempotency-Key; a
//     parked action or a finished background response costs a round trip each. Then the
//     settlement of all the batch's units happens at once (store.Tx.SettleWorkspaces): per
//     workspace one statement with one row update for their total spend, one range of event
//     cursors, every ledger row and event; all of it travels with COMMIT. Each ledger row and spend.recorded event
//     carries the balance after its own charge, as if the turns had been settled one by one
//     in the batch's order; cursors stay gap-free and in commit order across replicas (the
//     workspace rows are locked until COMMIT, as with Settle).
//   - a batch closes when the window has passed since its first unit arrived, when
//     DefaultGroupCommitMaxBatch units wait, or as soon as every turn on its way to the
//     committer (started, not yet handed over) has arrived: a lone turn does not wait.
//   - at most groupCommitInFlight (2) batches run at once, each on its own connection, so
//     the next batch gathers while the previous one commits. Within a batch, units
//     continuing a conversation are written in conversation order and workspaces settle in
//     id order, so two batches never take the same row locks in opposite orders.
//   - a unit that fails (its conversation deleted meanwhile, a background response finished
//     by another run) would roll the whole batch back: then every unit of the batch is
//     written again in a transaction of its own, so one unit's failure fails only that unit.
//     A batch-level failure (connection lost, serialization) is retried the same way, and a
//     unit that still fails gets its error.
//   - a batch is one pipelined transaction (store.Pipelined): its writes travel with the
//     workspace's lock and charge in one round trip, the ledger rows and events with COMMIT in
//     a second. Its units are woken right after COMMIT; the announcements of its events follow,
//     once the next batch may start.
//   - the batch runs detached from the turns' contexts: a client that went away does not
//     abort the others, nor its own commit.
//   - Close (after the HTTP server drained, App.Stop) commits what is queued; later turns
//     commit on their own.
type GroupCommit struct {
	store    *store.Store
	log      *slog.Logger
	window   time.Duration
	maxBatch int

	mu      sync.Mutex
	queue   []*commitUnit
	closed  bool
	running atomic.Int64 // turns that will hand a unit over and have not yet
	kick    chan struct{}
	stop    chan struct{}
	slots   chan struct{} // one per batch in flight
	batches sync.WaitGroup
	done    chan struct{}

	committed struct{ transactions, units atomic.Int64 } // for Stats
}

// Stats are how many transactions the committer ran (batches, and units written again alone)
// and how many units they committed.
func (g *GroupCommit) Stats() (transactions, units int64) {
	return g.committed.transactions.Load(), g.committed.units.Load()
}

// DefaultGroupCommitMaxBatch bounds the units of one batch.
const DefaultGroupCommitMaxBatch = 256

// groupCommitInFlight is how many batches may commit at once: the next batch gathers and
// writes while the previous one waits for its fsync.
const groupCommitInFlight = 2

// NewGroupCommit starts the group committer of p's turns; window is how long a batch waits
// for more units after its first. Close it when the process stops (after the HTTP server).
func NewGroupCommit(p *Pipeline, window time.Duration) *GroupCommit {
	g := &GroupCommit{store: p.store, log: p.log, window: window, maxBatch: DefaultGroupCommitMaxBatch,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), slots: make(chan struct{}, groupCommitInFlight),
		done: make(chan struct{})}
	p.groupCommit = g
	go g.run()
	return g
}

// groupCommitted tells whether the turn's commit goes to the group committer (not to the
// write-behind meter), so that its ticket counts it as on its way.
func (p *Pipeline) groupCommitted(t Turn) bool {
	return p.groupCommit != nil && (t.Persist || t.Record != nil || p.writeBehind == nil)
}

// ticket counts a turn on its way to the committer until it hands its unit over or ends.
type ticket struct {
	g     *GroupCommit
	ended bool
}

// begin counts a turn as on its way (when counted is true); nil-safe.
func (g *GroupCommit) begin(counted bool) *ticket {
	if g == nil || !counted {
		return nil
	}
	g.running.Add(1)
	return &ticket{g: g}
}

// end stops counting the turn; idempotent, nil-safe. A turn that ends without committing
// (its vendor failed) kicks the committer, which may have been waiting for it.
func (tk *ticket) end() {
	if tk == nil || tk.ended {
		return
	}
	tk.ended = true
	tk.g.running.Add(-1)
	tk.g.wake()
}

func (g *GroupCommit) wake() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// add hands a unit over; false when the committer is closed (the caller commits it itself).
func (g *GroupCommit) add(u *commitUnit, tk *ticket) bool {
	u.done = make(chan struct{})
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return false
	}
	g.queue = append(g.queue, u)
	g.mu.Unlock()
	if tk != nil && !tk.ended {
		tk.ended = true
		g.running.Add(-1)
	}
	g.wake()
	return true
}

func (g *GroupCommit) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

func (g *GroupCommit) run() {
	defer close(g.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-g.kick:
		case <-g.stop:
			g.drain()
			return
		}
		if g.queued() == 0 {
			continue
		}
		// Gather: until the window closes, the batch is full, or no other turn is on its way.
		timer.Reset(g.window)
	gather:
		for {
			if n := g.queued(); n >= g.maxBatch || g.running.Load() <= 0 {
				break
			}
			select {
			case <-g.kick:
			case <-timer.C:
				break gather
			case <-g.stop:
				break gather
			}
		}
		timer.Stop()
		g.slots <- struct{}{} // waits while inFlight batches commit; the queue keeps growing
		g.start()
	}
}

// start takes up to maxBatch units off the queue and commits them in the background; it
// holds a slot, released when the batch is done.
func (g *GroupCommit) start() {
	g.mu.Lock()
	n := min(len(g.queue), g.maxBatch)
	batch := slices.Clone(g.queue[:n])
	g.queue = g.queue[n:]
	more := len(g.queue) > 0
	g.mu.Unlock()
	if n == 0 {
		<-g.slots
		return
	}
	if more {
		g.wake()
	}
	g.batches.Add(1)
	go func() {
		defer g.batches.Done()
		announce := g.commit(batch)
		<-g.slots // the next batch may commit while this one announces
		announce()
	}()
}

// drain commits what is left in the queue (Close), then waits for the batches in flight.
func (g *GroupCommit) drain() {
	for g.queued() > 0 {
		g.slots <- struct{}{}
		g.start()
	}
	g.batches.Wait()
}

// commit writes the batch in one pipelined transaction (store.Pipelined: one round trip for
// new turns) and wakes its units; if that fails, each unit is written again alone. It
// returns the announcements of what committed, for after the slot is free.
func (g *GroupCommit) commit(batch []*commitUnit) (announce func()) {
	ctx := context.Background()
	order(batch)
	after, err := g.store.Pipelined(ctx, func(tx *store.Tx) error { return writeUnits(ctx, tx, batch) })
	g.committed.transactions.Add(1)
	if err == nil {
		g.committed.units.Add(int64(len(batch)))
	}
	if err == nil || len(batch) == 1 && !errors.Is(err, store.ErrNeedsPlainTx) {
		for _, u := range batch {
			u.err = err
			close(u.done)
		}
		return orNothing(after)
	}
	if !errors.Is(err, store.ErrNeedsPlainTx) {
		g.log.Warn("a group commit failed; committing its turns one by one", slog.Int("turns", len(batch)), slog.String("error", err.Error()))
	}
	var afters []func()
	for _, u := range batch {
		after, u.err = g.store.Pipelined(ctx, func(tx *store.Tx) error { return writeUnits(ctx, tx, []*commitUnit{u}) })
		if errors.Is(u.err, store.ErrNeedsPlainTx) {
			// Its caller's writes insert a job (Turn.Also): a plain transaction, which
			// announces what it committed itself.
			u.err = g.store.InTx(ctx, func(tx *store.Tx) error { return writeUnits(ctx, tx, []*commitUnit{u}) })
			after = func() {}
		}
		g.committed.transactions.Add(1)
		if u.err == nil {
			g.committed.units.Add(1)
			afters = append(afters, after)
		}
		close(u.done)
	}
	return func() {
		for _, a := range afters {
			a()
		}
	}
}

// orNothing is f, or a function doing nothing when f is nil.
func orNothing(f func()) func() {
	if f == nil {
		return func() {}
	}
	return f
}

// order sorts a batch for writing: units continuing a conversation first, by conversation
// id (the conversation rows are locked in one order by every batch), then the others in the
// order they arrived. Units of one conversation keep their arrival order.
func order(batch []*commitUnit) {
	slices.SortStableFunc(batch, func(a, b *commitUnit) int {
		ca, cb := a.conversation, b.conversation
		switch {
		case ca == nil && cb == nil:
			return 0
		case ca == nil:
			return 1
		case cb == nil:
			return -1
		}
		return bytes.Compare(ca.ID[:], cb.ID[:])
	})
}

// writeUnits writes every unit, then settles each workspace's units at once (one row update
// and one cursor range per workspace), all workspaces together (store.Tx.SettleWorkspaces:
// their rows locked in id order by every batch, and last: until COMMIT).
func writeUnits(ctx context.Context, tx *store.Tx, batch []*commitUnit) error {
	var workspaces []uuid.UUID
	byWS := map[uuid.UUID][]store.Settlement{}
	if err := writeMany(ctx, tx, batch); err != nil {
		return err
	}
	for _, u := range batch {
		ws := u.t.WorkspaceID
		if _, ok := byWS[ws]; !ok {
			workspaces = append(workspaces, ws)
		}
		items, err := u.settlements(ctx, tx)
		if err != nil {
			return err
		}
		byWS[ws] = append(byWS[ws], items...)
	}
	slices.SortFunc(workspaces, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	items := make([][]store.Settlement, len(workspaces))
	for i, ws := range workspaces {
		items[i] = byWS[ws]
	}
	return tx.SettleWorkspaces(ctx, workspaces, items)
}

// Close stops taking units (later turns commit on their own) and commits what was handed
// over. Call it after the HTTP server has drained; a turn still waiting is woken when its
// batch commits.
func (g *GroupCommit) Close(ctx context.Context) error {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		close(g.stop)
	}
	g.mu.Unlock()
	select {
	case <-g.done:
		return nil
	case <-ctx.Done():
		if g.queued() == 0 && len(g.slots) == 0 {
			<-g.done // nothing left to write: the committer is ending
			return nil
		}
		g.log.Error("stopping with stored turns still committing", slog.Int("queued", g.queued()))
		return ctx.Err()
	}
}

// writeMany does the writes of a batch of units but their settlement (a batch of one too, as
// a turn committed alone: Pipeline.commit), in a few round trips whatever their number
// (store.Tx.WriteTurns, store.Tx.InsertTurnRecords): every conversation opened by one INSERT
// with its first message seqs already reserved, their messages by another, a continued
// conversation's by one statement each, every inserted response and Idempotency-Key in one
// pipelined batch, all of it queued for the transaction's next round trip (store.Pipelined).
// What is rare is written unit by unit, a round trip each:
// parked actions, a record that finishes a background response. A unit's events are left in
// u.events and u.recorded; its conversation is restored first, so a unit written again after
// its batch rolled back starts afresh.
func writeMany(ctx context.Context, tx *store.Tx, batch []*commitUnit) error {
	writes := make([]*store.TurnWrite, len(batch))
	var turns []*store.TurnWrite
	for i, u := range batch {
		t, out := u.t, u.out
		out.Conversation, out.NewConversation = u.conversation, u.newConversation
		u.events, u.recorded = append([]store.NewEvent(nil), t.Opened...), nil
		out.appended = nil
		if !t.Persist {
			continue
		}
		turn := turnMessages(t, u.produced)
		msgs, err := toStored(turn)
		if err != nil {
			return err
		}
		w := &store.TurnWrite{WorkspaceID: t.WorkspaceID, Conversation: out.Conversation, Messages: msgs}
		if w.Conversation == nil {
			w.NewShortID = newConversationID(t)
		}
		writes[i], out.appended = w, &appendedTurn{msgs: turn, write: w}
		turns = append(turns, w)
	}
	if err := tx.WriteTurns(ctx, turns); err != nil {
		return err
	}
	var workspaces []uuid.UUID
	var records []store.TurnRecord
	for i, u := range batch {
		t, out := u.t, u.out
		if w := writes[i]; w != nil {
			if out.Conversation == nil {
				out.Conversation, out.NewConversation = w.Conversation, true
				u.events = append(u.events, createdEvent(*w.Conversation))
			}
			parked, err := park(ctx, tx, t, out)
			if err != nil {
				return err
			}
			u.events = append(u.events, parked...)
		}
		if t.Record != nil {
			rec, err := t.Record(out)
			if err != nil {
				return err
			}
			if rec.Finish {
				if err := writeRecord(ctx, tx, t, rec); err != nil {
					return err
				}
			} else {
				workspaces, records = append(workspaces, t.WorkspaceID), append(records, rec)
			}
			u.recorded = rec.Events
		}
		u.events = append(u.events, completedEvent(t, out))
	}
	return tx.InsertTurnRecords(ctx, workspaces, records)
}
