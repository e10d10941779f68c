package events

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/shortid"
	"switchboard/store"
	"switchboard/store/storetest"
)

// waitFor bounds every wait on a signal: a test that gets no signal fails instead of hanging.
// It is a deadline, never a measurement.
const waitFor = 20 * time.Second

type hubBundle struct {
	store *store.Store
	ws    uuid.UUID
	other uuid.UUID
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func setupHub(t *testing.T) (*Hub, *hubBundle) {
	t.Helper()
	st := storetest.New(t)
	ctx := context.Background()
	ws, err := st.CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)
	other, err := st.CreateWorkspace(ctx, "globex", 0)
	require.NoError(t, err)
	return NewHub(st, discardLog()), &hubBundle{store: st, ws: ws.ID, other: other.ID}
}

// runHub runs the hub until the test ends, and waits for Run to return.
func runHub(t *testing.T, h *Hub) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// appendEvents commits events of one workspace in one transaction.
func appendEvents(t *testing.T, st *store.Store, ws uuid.UUID, events ...store.NewEvent) []store.Event {
	t.Helper()
	var out []store.Event
	require.NoError(t, st.InTx(context.Background(), func(tx *store.Tx) error {
		var err error
		out, err = tx.AppendEvents(context.Background(), ws, events)
		return err
	}))
	return out
}

func turn(n int) store.NewEvent {
	return store.NewEvent{Type: "turn.completed", Data: map[string]int{"n": n}}
}

func receive[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(waitFor):
		t.Fatalf("no %s within %s", what, waitFor)
		panic("unreachable")
	}
}

func requireEmpty[T any](t *testing.T, c <-chan T, msg string) {
	t.Helper()
	select {
	case v := <-c:
		t.Fatalf("%s: got %v", msg, v)
	default:
	}
}

// listening subscribes and waits until the hub's LISTEN is in effect: the hub lags every
// subscriber right after its LISTEN, so that what committed before it is read from the table.
func listening(t *testing.T, h *Hub, ws uuid.UUID) *Subscription {
	t.Helper()
	sub := h.Subscribe(ws)
	t.Cleanup(sub.Close)
	runHub(t, h)
	receive(t, sub.Lagged, "lag signal after LISTEN")
	return sub
}

func TestHubFansOutCommittedEvents(t *testing.T) {
	t.Parallel()
	h, b := setupHub(t)
	sub := listening(t, h, b.ws)
	second := h.Subscribe(b.ws)
	defer second.Close()
	theirs := h.Subscribe(b.other)
	defer theirs.Close()
	require.Equal(t, 3, h.Subscribers())

	mine := appendEvents(t, b.store, b.ws, turn(1))[0]
	other := appendEvents(t, b.store, b.other, turn(2))[0]

	e := receive(t, sub.C, "event")
	require.Equal(t, []any{b.ws, mine.Seq, mine.ShortID, "turn.completed"}, []any{e.WorkspaceID, e.Seq, e.ShortID, e.Type})
	require.Equal(t, string(mine.Envelope), string(e.Envelope), "the envelope as committed")
	require.Equal(t, e, receive(t, second.C, "event for the second subscriber"))
	got := receive(t, theirs.C, "the other workspace's event")
	require.Equal(t, []any{b.other, other.Seq}, []any{got.WorkspaceID, got.Seq})
	// One workspace never receives another's events: the next one mine receive is mine.
	next := appendEvents(t, b.store, b.ws, turn(3))[0]
	require.Equal(t, next.Seq, receive(t, sub.C, "the next event").Seq)
	require.Equal(t, next.Seq, receive(t, second.C, "the next event").Seq)

	second.Close()
	theirs.Close()
	require.Equal(t, 1, h.Subscribers())
}

// TestHubDeliversAnnouncedEventsWhole: the events of a transaction, however many and however
// large (a NOTIFY payload holds at most 8000 bytes), reach every subscriber whole, in order,
// from one notice.
func TestHubDeliversAnnouncedEventsWhole(t *testing.T) {
	t.Parallel()
	h, b := setupHub(t)
	sub := listening(t, h, b.ws)
	second := h.Subscribe(b.ws)
	defer second.Close()
	h.mu.Lock()
	sub.C = make(chan store.Event, 2*fetchPage) // room for all of it: no lag
	h.mu.Unlock()
	var events []store.NewEvent
	for i := range fetchPage + fetchPage/2 { // two pages
		events = append(events, turn(i))
	}
	events = append(events, store.NewEvent{Type: "turn.completed", Data: map[string]string{"text": strings.Repeat("x", 9000)}})
	want := appendEvents(t, b.store, b.ws, events...)
	for _, w := range want {
		got := receive(t, sub.C, "event")
		require.Equal(t, w.Seq, got.Seq)
		require.Equal(t, string(w.Envelope), string(got.Envelope))
	}
	requireEmpty(t, sub.Lagged, "every event came through the hub")
	// The other subscriber's buffer filled up: it got the first events and was told to read
	// the rest from the table.
	for _, w := range want[:cap(second.C)] {
		require.Equal(t, w.Seq, receive(t, second.C, "event").Seq)
	}
	receive(t, second.Lagged, "lag signal")
}

// TestHubLagsASlowSubscriber: a subscriber whose buffer is full is told to read from the
// table instead of blocking the hub (or other subscribers).
func TestHubLagsASlowSubscriber(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, discardLog())
	ws := uuid.New()
	slow := h.Subscribe(ws)
	defer slow.Close()
	for seq := int64(1); seq <= int64(cap(slow.C)); seq++ {
		h.dispatch(store.Event{WorkspaceID: ws, Seq: seq})
	}
	requireEmpty(t, slow.Lagged, "a full buffer is not a lag yet")
	fast := h.Subscribe(ws)
	defer fast.Close()
	h.dispatch(store.Event{WorkspaceID: ws, Seq: int64(cap(slow.C)) + 1})
	receive(t, slow.Lagged, "lag signal")
	require.Equal(t, int64(cap(slow.C))+1, receive(t, fast.C, "event").Seq, "others still get the event")
	requireEmpty(t, h.wake, "a notice alone does not wake the relay (DispatchChannel does)")
}

// TestHubCatchUpRecoversLostNotices: events whose announcement was lost (here: nobody was
// listening) are found by comparing cursors, and subscribers are told to read the table,
// which then holds every one of them.
func TestHubCatchUpRecoversLostNotices(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, b := setupHub(t)
	sub := h.Subscribe(b.ws)
	defer sub.Close()
	h.catchUp(ctx)
	requireEmpty(t, sub.Lagged, "nothing committed, nothing to catch up")

	appendEvents(t, b.store, b.ws, turn(1), turn(2))
	appendEvents(t, b.store, b.ws, turn(3))
	appendEvents(t, b.store, b.other, turn(4))
	theirs := h.Subscribe(b.other)
	defer theirs.Close()
	h.announced(store.Notice{WorkspaceID: b.other, First: 1, Last: 1}) // theirs saw its notice

	h.catchUp(ctx)
	receive(t, sub.Lagged, "lag signal for the lost notices")
	requireEmpty(t, theirs.Lagged, "a workspace whose notices arrived is not lagged")
	page, err := b.store.EventsAfter(ctx, b.ws, 0, 100)
	require.NoError(t, err)
	require.Len(t, page, 3)

	h.catchUp(ctx)
	requireEmpty(t, sub.Lagged, "caught up: no second signal for the same cursor")
}

// TestHubReconnects: when the LISTEN connection dies, subscribers are told to read the table
// (notices may have been lost meanwhile) and the hub listens again.
func TestHubReconnects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, b := setupHub(t)
	sub := listening(t, h, b.ws)
	listener := func() []int {
		rows, err := b.store.Pool().Query(ctx, `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN `+store.EventChannel+`%' AND pid <> pg_backend_pid()`)
		require.NoError(t, err)
		var pids []int
		for rows.Next() {
			var pid int
			require.NoError(t, rows.Scan(&pid))
			pids = append(pids, pid)
		}
		require.NoError(t, rows.Err())
		return pids
	}
	pids := listener()
	require.Len(t, pids, 1)
	_, err := b.store.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pids[0])
	require.NoError(t, err)
	receive(t, sub.Lagged, "lag signal after the connection was lost")
	require.Eventually(t, func() bool {
		now := listener()
		return len(now) == 1 && now[0] != pids[0]
	}, waitFor, 10*time.Millisecond, "the hub listens again")

	ev := appendEvents(t, b.store, b.ws, turn(1))[0]
	require.Equal(t, ev.Seq, receive(t, sub.C, "notice after reconnecting").Seq)
}

// TestHubResumeIsGapFree follows the hub's contract the way a feed does (take a notice when
// it is the next cursor, read the table on a gap or a lag signal) while writers commit
// concurrently: the reader sees every event once, in order.
func TestHubResumeIsGapFree(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	h, b := setupHub(t)
	sub := listening(t, h, b.ws)
	appendEvents(t, b.store, b.ws, turn(0), turn(0)) // committed before the reader starts: replayed

	const writers, perWriter = 4, 15
	total := int64(2 + writers*perWriter)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				if err := b.store.InTx(ctx, func(tx *store.Tx) error {
					_, err := tx.AppendEvents(ctx, b.ws, []store.NewEvent{turn(i)})
					return err
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer wg.Wait()

	var cursor int64
	var seen []int64
	replay := func() {
		page, err := b.store.EventsAfter(ctx, b.ws, cursor, 1000)
		require.NoError(t, err)
		for _, e := range page {
			seen = append(seen, e.Seq)
			cursor = e.Seq
		}
	}
	replay()
	for cursor < total {
		select {
		case <-ctx.Done():
			t.Fatalf("reader stuck at cursor %d of %d", cursor, total)
		case n := <-sub.C:
			switch {
			case n.Seq <= cursor:
			case n.Seq == cursor+1:
				var env struct{ Type string }
				require.NoError(t, json.Unmarshal(n.Envelope, &env))
				require.Equal(t, n.Type, env.Type)
				seen = append(seen, n.Seq)
				cursor = n.Seq
			default:
				replay()
			}
		case <-sub.Lagged:
			replay()
		}
	}
	want := make([]int64, total)
	for i := range want {
		want[i] = int64(i + 1)
	}
	require.Equal(t, want, seen)
}

func TestHubShutdown(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, discardLog())
	requireEmpty(t, h.Closing(), "open until shutdown begins")
	h.BeginShutdown()
	h.BeginShutdown() // twice is fine
	receive(t, h.Closing(), "closing signal")
}

// TestHubReadsOnlyWatchedWorkspaces: a notice of a workspace nobody in the process watches is
// dropped; a watched one's cursors wait to be read, merged with the next notices.
func TestHubReadsOnlyWatchedWorkspaces(t *testing.T) {
	t.Parallel()
	h, b := setupHub(t)
	sub := h.Subscribe(b.ws)
	defer sub.Close()
	h.announced(store.Notice{WorkspaceID: b.other, First: 1, Last: 4})
	h.announced(store.Notice{WorkspaceID: b.ws, First: 3, Last: 5})
	h.announced(store.Notice{WorkspaceID: b.ws, First: 6, Last: 9})
	require.Equal(t, map[uuid.UUID]store.Notice{b.ws: {WorkspaceID: b.ws, First: 3, Last: 9}}, h.pending)
	require.Equal(t, int64(9), h.seen[b.ws])
	sub.Close()
	require.Empty(t, h.pending, "a workspace without subscribers any more")
	h.announced(store.Notice{WorkspaceID: b.ws, First: 10, Last: 10})
	require.Empty(t, h.pending)

	// End to end: the other workspace's event reaches no one, and the watched one's does.
	mine := h.Subscribe(b.ws)
	defer mine.Close()
	runHub(t, h)
	receive(t, mine.Lagged, "lag signal after LISTEN")
	appendEvents(t, b.store, b.other, turn(1))
	ev := appendEvents(t, b.store, b.ws, turn(2))[0]
	require.Equal(t, ev.Seq, receive(t, mine.C, "event").Seq)
}

// TestHubWakesTheRelayOnlyForQueuedDeliveries: events that no enabled endpoint subscribes to
// commit without waking the webhook relay; once an endpoint subscribes, its workspace's
// events wake it (DispatchChannel), in another workspace's process as well.
func TestHubWakesTheRelayOnlyForQueuedDeliveries(t *testing.T) {
	t.Parallel()
	h, b := setupHub(t)
	mine := h.Subscribe(b.ws)
	defer mine.Close()
	runHub(t, h)
	receive(t, mine.Lagged, "lag signal after LISTEN")
	receive(t, h.wake, "a wake-up after LISTEN, for what was queued before it")

	// Notices arrive in commit order: once the later event's notice is here, the earlier
	// commit's announcements have been read too.
	appendEvents(t, b.store, b.other, turn(1))
	ev := appendEvents(t, b.store, b.ws, turn(1))[0]
	require.Equal(t, ev.Seq, receive(t, mine.C, "notice").Seq)
	requireEmpty(t, h.wake, "no endpoint: nothing to relay, no wake-up")

	_, err := b.store.CreateWebhookEndpoint(context.Background(), store.WebhookEndpoint{WorkspaceID: b.other, ShortID: shortid.New(shortid.Webhook),
		URL: "https://example.com/hook", EventTypes: []string{"turn.completed"}, Secret: NewSecret()})
	require.NoError(t, err)
	appendEvents(t, b.store, b.other, turn(2))
	receive(t, h.wake, "relay wake-up for a subscribed event")
}
