// Package events delivers the workspace event log: a per-process hub that listens for
// committed events (PostgreSQL LISTEN/NOTIFY) and fans them out to SSE subscribers, a relay
// that turns outbox rows into webhook delivery jobs exactly once, and the signed delivery
// worker.
package events

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"switchboard/store"
)

// Hub holds one LISTEN connection per process and fans committed events out to the
// subscribers of each workspace, so a thousand SSE clients cost one database connection, not
// a thousand polls. A notice names a workspace and the cursors of its new events
// (store.Notice); for a workspace with subscribers in this process the hub reads those
// events from the table once, whatever the number of subscribers, and hands them out; the
// notices of other workspaces cost it a line read and a map lookup.
type Hub struct {
	store *store.Store
	log   *slog.Logger
	// CatchUp is how often the hub compares the cursors of watched workspaces with the
	// notices it saw, to recover announcements lost when a replica died between a commit and
	// its announcement.
	CatchUp time.Duration
	// LiveCheck is how often the keys of open streams are checked against the database, in
	// case a revocation's announcement was lost (see Track).
	LiveCheck time.Duration

	mu   sync.Mutex
	subs map[uuid.UUID]map[*Subscription]struct{}
	seen map[uuid.UUID]int64 // highest cursor announced per watched workspace
	// pending holds, per watched workspace, the cursors announced and not yet read from the
	// table (several notices merged); fetched is the highest cursor read so far. The reader
	// (fetchLoop) is woken through fetch.
	pending map[uuid.UUID]store.Notice
	fetched map[uuid.UUID]int64
	fetch   chan struct{}
	// wake is signalled when events were queued for delivery, for the webhook relay.
	wake chan struct{}
	// closing is closed when the process starts shutting down: feeds end so the drain is
	// not held by connections that never finish; their clients resume elsewhere.
	closing   chan struct{}
	closeOnce sync.Once

	streams streams
	keys    keyWaits

	// onRevocation hear every announcement on store.RevocationChannel (OnRevocation).
	revMu        sync.RWMutex
	onRevocation []func(store.Revocation)
}

// OnRevocation makes f hear every announcement on store.RevocationChannel, from any replica,
// and a zero store.Revocation whenever the hub's LISTEN connection starts again (anything may
// have been missed meanwhile: forget everything). f must be quick. Set it before Run.
func (h *Hub) OnRevocation(f func(store.Revocation)) {
	h.revMu.Lock()
	defer h.revMu.Unlock()
	h.onRevocation = append(h.onRevocation, f)
}

func (h *Hub) tellRevocation(rv store.Revocation) {
	h.revMu.RLock()
	defer h.revMu.RUnlock()
	for _, f := range h.onRevocation {
		f(rv)
	}
}

// NewHub returns a hub; Run starts listening.
func NewHub(st *store.Store, log *slog.Logger) *Hub {
	return &Hub{store: st, log: log, CatchUp: 2 * time.Second, LiveCheck: 5 * time.Second,
		subs: map[uuid.UUID]map[*Subscription]struct{}{}, seen: map[uuid.UUID]int64{},
		pending: map[uuid.UUID]store.Notice{}, fetched: map[uuid.UUID]int64{}, fetch: make(chan struct{}, 1),
		wake: make(chan struct{}, 1), closing: make(chan struct{}), streams: newStreams()}
}

// Closing is closed when the process begins to shut down.
func (h *Hub) Closing() <-chan struct{} { return h.closing }

// BeginShutdown tells every feed to end.
func (h *Hub) BeginShutdown() { h.closeOnce.Do(func() { close(h.closing) }) }

// Subscription receives the committed events of one workspace, in cursor order. When it
// falls behind (its buffer is full), the hub's connection was lost or the hub could not read
// the events, Lagged is signalled and the subscriber must read what it missed from the
// table; C is a fast path, never the record: it may skip events (a subscriber that sees a
// gap reads the table) and repeat some.
type Subscription struct {
	C      chan store.Event
	Lagged chan struct{}
	hub    *Hub
	ws     uuid.UUID
}

// Subscribe starts receiving the workspace's events. Close it when done.
func (h *Hub) Subscribe(workspaceID uuid.UUID) *Subscription {
	s := &Subscription{C: make(chan store.Event, 256), Lagged: make(chan struct{}, 1), hub: h, ws: workspaceID}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[workspaceID] == nil {
		h.subs[workspaceID] = map[*Subscription]struct{}{}
	}
	h.subs[workspaceID][s] = struct{}{}
	return s
}

// Close stops the subscription and frees what it held.
func (s *Subscription) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs[s.ws], s)
	if len(h.subs[s.ws]) == 0 {
		delete(h.subs, s.ws)
		delete(h.seen, s.ws)
		delete(h.pending, s.ws)
		delete(h.fetched, s.ws)
	}
}

// Subscribers counts the live subscriptions (for tests and metrics).
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.subs {
		n += len(m)
	}
	return n
}

func (s *Subscription) lag() {
	select {
	case s.Lagged <- struct{}{}:
	default:
	}
}

// dispatch hands a committed event to its workspace's subscribers; one whose buffer is full
// is told to read the table instead.
func (h *Hub) dispatch(e store.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[e.WorkspaceID] {
		select {
		case s.C <- e:
		default:
			s.lag()
		}
	}
}

// announced takes in a notice: for a watched workspace its cursors are left for fetchLoop
// to read (merged with any still waiting), the others are dropped.
func (h *Hub) announced(n store.Notice) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, watched := h.subs[n.WorkspaceID]; !watched {
		return
	}
	h.seen[n.WorkspaceID] = max(h.seen[n.WorkspaceID], n.Last)
	if p, ok := h.pending[n.WorkspaceID]; ok {
		n.First, n.Last = min(p.First, n.First), max(p.Last, n.Last)
	}
	h.pending[n.WorkspaceID] = n
	select {
	case h.fetch <- struct{}{}:
	default:
	}
}

// fetchLoop reads the announced events of watched workspaces from the table and dispatches
// them, until ctx ends. Notices that arrive while it reads are merged and read next time, so
// a reader that falls behind reads larger ranges, not more of them.
func (h *Hub) fetchLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.fetch:
		}
		h.mu.Lock()
		pending := h.pending
		h.pending = map[uuid.UUID]store.Notice{}
		h.mu.Unlock()
		for _, n := range pending {
			h.read(ctx, n)
		}
	}
}

// read dispatches the events of n not read yet, in pages; when the table cannot be read the
// workspace's subscribers are told to read it themselves.
func (h *Hub) read(ctx context.Context, n store.Notice) {
	ws := n.WorkspaceID
	h.mu.Lock()
	after := max(n.First-1, h.fetched[ws])
	h.mu.Unlock()
	for after < n.Last {
		page, err := h.store.EventsAfter(ctx, ws, after, fetchPage)
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("reading announced events failed; their feeds read the table", slog.String("error", err.Error()))
				h.lag(ws)
			}
			return
		}
		for _, e := range page {
			h.dispatch(e)
			after = e.Seq
		}
		if len(page) < fetchPage {
			break
		}
	}
	h.mu.Lock()
	if _, watched := h.subs[ws]; watched {
		h.fetched[ws] = max(h.fetched[ws], after)
	}
	h.mu.Unlock()
}

// fetchPage is how many events read fetches at a time.
const fetchPage = 500

// lag tells the subscribers of one workspace to read the table.
func (h *Hub) lag(ws uuid.UUID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[ws] {
		s.lag()
	}
}

// wakeRelay tells the webhook relay that events were queued for delivery (DispatchChannel),
// or may have been while the hub was not listening.
func (h *Hub) wakeRelay() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// lagAll tells every subscriber to re-read from the table: notices may have been lost while
// the connection was down.
func (h *Hub) lagAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.subs {
		for s := range m {
			s.lag()
		}
	}
}

// catchUp tells the subscribers of any watched workspace whose cursor moved past the last
// notice seen to read from the table.
func (h *Hub) catchUp(ctx context.Context) {
	h.mu.Lock()
	watched := make([]uuid.UUID, 0, len(h.subs))
	for ws := range h.subs {
		watched = append(watched, ws)
	}
	h.mu.Unlock()
	if len(watched) == 0 {
		return
	}
	cursors, err := h.store.EventCursors(ctx, watched)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ws, cursor := range cursors {
		if _, still := h.subs[ws]; !still || cursor <= h.seen[ws] {
			continue
		}
		h.seen[ws] = cursor
		for s := range h.subs[ws] {
			s.lag()
		}
	}
}

// Run listens until ctx ends, reconnecting after failures, and catches up periodically.
func (h *Hub) Run(ctx context.Context) {
	go h.fetchLoop(ctx)
	go func() {
		tick := time.NewTicker(h.CatchUp)
		defer tick.Stop()
		check := time.NewTicker(h.LiveCheck)
		defer check.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				h.catchUp(ctx)
			case <-check.C:
				h.checkLive(ctx)
			}
		}
	}()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := h.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		h.log.Warn("event listener lost its connection; reconnecting", slog.String("error", err.Error()))
		h.lagAll()
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		// At most a second apart: the feeds hear events again within a second or so of the
		// database's return (issue 48), and a failed attempt costs one refused connection.
		backoff = min(2*backoff, time.Second)
	}
}

func (h *Hub) listen(ctx context.Context) error {
	pooled, err := h.store.Pool().Acquire(ctx)
	if err != nil {
		return err
	}
	// Taken out of the pool and closed at the end, never returned: it carries a LISTEN.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	// Named apart from the pool's connections in pg_stat_activity, in the same round trip.
	if _, err := conn.Exec(ctx, "LISTEN "+store.EventChannel+"; LISTEN "+store.RevocationChannel+"; LISTEN "+store.IdempotencyChannel+"; LISTEN "+store.DispatchChannel+
		"; SET application_name = '"+strings.ReplaceAll(h.store.ConnName("events"), "'", "''")+"'"); err != nil {
		return err
	}
	// Whatever was announced before the LISTEN took effect is read from the database: the
	// events, the revocations, the idempotency keys.
	h.lagAll()
	h.tellRevocation(store.Revocation{})
	h.checkLive(ctx)
	h.keyChanged("")
	h.wakeRelay()
	for {
		msg, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch msg.Channel {
		case store.RevocationChannel:
			h.revoked(msg.Payload)
			continue
		case store.IdempotencyChannel:
			h.keyChanged(msg.Payload)
			continue
		case store.DispatchChannel:
			h.wakeRelay()
			continue
		}
		notices, err := store.DecodeNotices(msg.Payload)
		if err != nil {
			h.log.Error("malformed event notice", slog.String("payload", msg.Payload))
			continue
		}
		for _, n := range notices {
			h.announced(n)
		}
	}
}
