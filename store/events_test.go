package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/shortid"
	"switchboard/store"
	"switchboard/store/storetest"
)

// TestCursorsBecomeVisibleInOrder: many writers append events while a reader polls with
// its cursor. If cursor N+1 could commit (become visible) before cursor N, the reader would
// see a gap, advance past N, and never see N: the reader checks that every poll continues
// exactly where the previous one ended.
func TestCursorsBecomeVisibleInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)

	const writers, perWriter = 8, 40
	var wg sync.WaitGroup
	var done atomic.Bool
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < perWriter; j++ {
				err := s.InTx(ctx, func(tx *store.Tx) error {
					_, err := tx.AppendEvents(ctx, w.ID, []store.NewEvent{{Type: "turn.completed", Data: map[string]int{"j": j}}})
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); done.Store(true) }()

	var cursor int64
	for polls := 0; ; polls++ {
		finished := done.Load()
		page, err := s.EventsAfter(ctx, w.ID, cursor, 1000)
		require.NoError(t, err)
		for _, e := range page {
			require.Equal(t, cursor+1, e.Seq, "after cursor %d the next visible event must be %d", cursor, cursor+1)
			cursor = e.Seq
		}
		if finished && len(page) == 0 {
			break
		}
	}
	require.Equal(t, int64(writers*perWriter), cursor)
}

// TestOnlySubscribedEventsAreQueuedForWebhooks: the relay's queue gets an event only when an
// enabled endpoint of its workspace subscribes to its type as it commits, so a workspace
// without webhooks pays nothing for the outbox.
func TestOnlySubscribedEventsAreQueuedForWebhooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSecrets(t)
	s := b.store
	quiet, err := s.CreateWorkspace(ctx, "no-webhooks", 0)
	require.NoError(t, err)
	ep, err := s.CreateWebhookEndpoint(ctx, store.WebhookEndpoint{WorkspaceID: b.ws, ShortID: shortid.New(shortid.Webhook),
		URL: "https://hooks.example.com/x", EventTypes: []string{"turn.completed"}, Secret: newSecret(t)})
	require.NoError(t, err)

	both := []store.NewEvent{{Type: "turn.completed", Data: map[string]int{}}, {Type: "spend.recorded", Data: map[string]int{}}}
	for _, ws := range []uuid.UUID{quiet.ID, b.ws} {
		_, err := s.AppendEvents(ctx, ws, both)
		require.NoError(t, err)
	}

	var queued int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM event_dispatch`).Scan(&queued))
	require.Equal(t, 1, queued, "only the subscribed turn.completed of the workspace with an endpoint is queued")
	require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
		claimed, err := tx.ClaimUndispatched(ctx, 100)
		require.NoError(t, err)
		require.Equal(t, []store.Dispatch{{WorkspaceID: b.ws, Seq: 1, EndpointIDs: []uuid.UUID{ep.ID}}}, claimed)
		return nil
	}))
}
