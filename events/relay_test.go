package events

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"switchboard/shortid"
	"switchboard/store"
)

type relayBundle struct {
	*hubBundle
	hub    *Hub
	driver *riverpgxv5.Driver
}

// setupRelay builds a relay over an insert-only River client: the delivery jobs it inserts
// stay in river_job for the test to read.
func setupRelay(t *testing.T) (*Relay, *relayBundle) {
	t.Helper()
	h, b := setupHub(t)
	driver := riverpgxv5.New(b.store.Pool())
	jobs, err := river.NewClient(driver, &river.Config{})
	require.NoError(t, err)
	return NewRelay(b.store, jobs, h, discardLog()), &relayBundle{hubBundle: b, hub: h, driver: driver}
}

func (b *relayBundle) endpoint(t *testing.T, ws uuid.UUID, enabled bool, types ...string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	ep, err := b.store.CreateWebhookEndpoint(ctx, store.WebhookEndpoint{WorkspaceID: ws, ShortID: shortid.New(shortid.Webhook),
		URL: "https://example.com/hook", EventTypes: types, Secret: NewSecret()})
	require.NoError(t, err)
	if !enabled {
		_, err = b.store.UpdateWebhookEndpoint(ctx, ws, ep.ShortID, store.WebhookUpdate{Enabled: &enabled})
		require.NoError(t, err)
	}
	return ep.ID
}

// deliveries returns the inserted delivery jobs' args, sorted; want is how many there must be.
func (b *relayBundle) deliveries(t *testing.T, want int) []DeliveryArgs {
	t.Helper()
	if want == 0 {
		rivertest.RequireNotInserted(context.Background(), t, b.driver, DeliveryArgs{}, nil)
		return nil
	}
	expected := make([]rivertest.ExpectedJob, want)
	for i := range expected {
		expected[i] = rivertest.ExpectedJob{Args: DeliveryArgs{}, Opts: &rivertest.RequireInsertedOpts{Queue: DeliveryQueue, MaxAttempts: MaxAttempts}}
	}
	rows := rivertest.RequireManyInserted(context.Background(), t, b.driver, expected)
	out := make([]DeliveryArgs, len(rows))
	for i, r := range rows {
		require.NoError(t, json.Unmarshal(r.EncodedArgs, &out[i]))
	}
	sortDeliveries(out)
	return out
}

func sortDeliveries(d []DeliveryArgs) {
	sort.Slice(d, func(i, j int) bool {
		if d[i].EndpointID != d[j].EndpointID {
			return d[i].EndpointID.String() < d[j].EndpointID.String()
		}
		return d[i].EventSeq < d[j].EventSeq
	})
}

// TestRelayFansOutOnce: each event becomes one job per enabled endpoint of its workspace
// subscribed to its type, and a second pass inserts nothing.
func TestRelayFansOutOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, b := setupRelay(t)
	all := b.endpoint(t, b.ws, true, "*")
	turns := b.endpoint(t, b.ws, true, "turn.completed")
	b.endpoint(t, b.ws, false, "*") // disabled: receives nothing
	theirs := b.endpoint(t, b.other, true, "*")

	mine := appendEvents(t, b.store, b.ws, turn(1), store.NewEvent{Type: "spend.recorded", Data: map[string]int{}})
	other := appendEvents(t, b.store, b.other, turn(2))
	appendEvents(t, b.store, b.ws, store.NewEvent{Type: "meta_response.completed", Data: map[string]int{}})

	n, err := r.once(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, n, "every event is claimed, with or without receivers")
	want := []DeliveryArgs{
		{WorkspaceID: b.ws, EndpointID: all, EventSeq: mine[0].Seq},
		{WorkspaceID: b.ws, EndpointID: all, EventSeq: mine[1].Seq},
		{WorkspaceID: b.ws, EndpointID: all, EventSeq: 3}, // "*" includes meta_response.completed
		{WorkspaceID: b.ws, EndpointID: turns, EventSeq: mine[0].Seq},
		{WorkspaceID: b.other, EndpointID: theirs, EventSeq: other[0].Seq},
	}
	sortDeliveries(want)
	require.Equal(t, want, b.deliveries(t, len(want)))

	n, err = r.once(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	b.deliveries(t, len(want))
}

// TestRelayConcurrentReplicasFanOutExactlyOnce: relays of several replicas share the outbox
// and together insert each delivery exactly once.
func TestRelayConcurrentReplicasFanOutExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, b := setupRelay(t)
	ep := b.endpoint(t, b.ws, true, "*")
	const events = 120
	for i := 0; i < events; i += 10 {
		batch := make([]store.NewEvent, 10)
		for j := range batch {
			batch[j] = turn(i + j)
		}
		appendEvents(t, b.store, b.ws, batch...)
	}
	var wg sync.WaitGroup
	for replica := 0; replica < 4; replica++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := r.once(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if n == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	got := b.deliveries(t, events)
	for i, d := range got {
		require.Equal(t, DeliveryArgs{WorkspaceID: b.ws, EndpointID: ep, EventSeq: int64(i + 1)}, d)
	}
}

// TestRelayWakesOnNotice: with the periodic sweep out of the way, the hub's notice alone
// wakes the relay.
func TestRelayWakesOnNotice(t *testing.T) {
	t.Parallel()
	r, b := setupRelay(t)
	r.Interval = time.Hour
	ep := b.endpoint(t, b.ws, true, "*")
	listening(t, b.hub, b.ws)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// The first event may be relayed by Run's first pass; the second comes after that pass
	// and only a wake-up can relay it.
	for seq := 1; seq <= 2; seq++ {
		appendEvents(t, b.store, b.ws, turn(seq))
		require.Eventually(t, func() bool {
			var n int
			require.NoError(t, b.store.Pool().QueryRow(context.Background(),
				`SELECT count(*) FROM river_job WHERE kind = $1`, DeliveryArgs{}.Kind()).Scan(&n))
			return n == seq
		}, waitFor, 10*time.Millisecond, "event %d relayed", seq)
	}
	require.Equal(t, []DeliveryArgs{{WorkspaceID: b.ws, EndpointID: ep, EventSeq: 1}, {WorkspaceID: b.ws, EndpointID: ep, EventSeq: 2}}, b.deliveries(t, 2))
}
