package store_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/shortid"
	"switchboard/store"
	"switchboard/store/storetest"
)

// TestABulkDeleteLocksConversationsInIDOrder: a bulk delete of conversations and a group
// commit continuing two of them (which updates its conversations in id order) cannot
// deadlock. A delete taking its rows in the order it finds them can lock the higher id
// first (in one of the two orders of creation), then wait for the lower one the group commit
// holds, while the group commit waits for the higher one: PostgreSQL then aborts the
// delete's batch after deadlock_timeout. Locking in id order, the delete waits for the lower
// one holding nothing, and deletes both once the group commit has committed.
func TestABulkDeleteLocksConversationsInIDOrder(t *testing.T) {
	st := storetest.New(t)
	// Which of the two a delete finds first depends on its plan (the table in physical order,
	// or conversations_workspace_idx, newest first), so each order is tried.
	for _, highFirst := range []bool{true, false} {
		low, high := uuid.New(), uuid.New()
		if bytes.Compare(low[:], high[:]) > 0 {
			low, high = high, low
		}
		created := []uuid.UUID{low, high}
		if highFirst {
			created = []uuid.UUID{high, low}
		}
		deleteWhileABatchUpdates(t, st, fmt.Sprintf("bulk-locks-%t", highFirst), created, low, high)
	}
}

// deleteWhileABatchUpdates creates the conversations of created in a new workspace (name), one
// transaction each, then has a batch update low, a bulk delete of the workspace's
// conversations start, and the batch update high once the delete waits. Both must commit.
func deleteWhileABatchUpdates(t *testing.T, st *store.Store, name string, created []uuid.UUID, low, high uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	w, err := st.CreateWorkspace(ctx, name, 0)
	require.NoError(t, err)
	for _, id := range created {
		_, err := st.Pool().Exec(ctx, `INSERT INTO conversations (id, workspace_id, short_id, channel) VALUES ($1, $2, $3, 'sms')`,
			id, w.ID, shortid.New(shortid.Conversation))
		require.NoError(t, err)
	}

	batch, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = batch.Rollback(ctx) }()
	touch := `UPDATE conversations SET updated_at = now() WHERE id = $1`
	_, err = batch.Exec(ctx, touch, low)
	require.NoError(t, err)

	done, deleted := deleteInBackground(st, w.ID, store.BulkSet{Channel: "sms"})
	storetest.WaitBlockedOrDone(t, st, nil)
	_, err = batch.Exec(ctx, touch, high)
	require.NoError(t, err, "the batch's second update")
	require.NoError(t, batch.Commit(ctx))
	require.NoError(t, <-done, "the bulk delete's batch")
	require.Equal(t, 2, *deleted)
}

// TestABulkDeleteChecksARowAgainOnceLocked: a conversation that matched the delete's filter
// when the batch picked it, but was closed by the transaction whose lock the batch waited
// for, is not deleted: the filter is checked again on the row as that transaction left it.
func TestABulkDeleteChecksARowAgainOnceLocked(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	w, err := st.CreateWorkspace(ctx, "bulk-recheck", 0)
	require.NoError(t, err)
	var closing, open uuid.UUID
	for _, id := range []*uuid.UUID{&closing, &open} {
		require.NoError(t, st.Pool().QueryRow(ctx, `INSERT INTO conversations (workspace_id, short_id, channel) VALUES ($1, $2, 'sms') RETURNING id`,
			w.ID, shortid.New(shortid.Conversation)).Scan(id))
	}

	writer, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = writer.Rollback(ctx) }()
	_, err = writer.Exec(ctx, `UPDATE conversations SET status = 'closed' WHERE id = $1`, closing)
	require.NoError(t, err)

	done, deleted := deleteInBackground(st, w.ID, store.BulkSet{Status: "open"})
	storetest.WaitBlockedOrDone(t, st, nil)
	require.NoError(t, writer.Commit(ctx))
	require.NoError(t, <-done)
	require.Equal(t, 1, *deleted)
	var left []uuid.UUID
	rows, err := st.Pool().Query(ctx, `SELECT id FROM conversations WHERE workspace_id = $1`, w.ID)
	require.NoError(t, err)
	for rows.Next() {
		var id uuid.UUID
		require.NoError(t, rows.Scan(&id))
		left = append(left, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []uuid.UUID{closing}, left)
}

// deleteInBackground runs a bulk delete batch of ws's conversations matching set in a
// transaction of its own, with a deadline (only a run that waits for ever meets it); done
// gets its error once it has committed or failed, and *deleted is its count by then.
func deleteInBackground(st *store.Store, ws uuid.UUID, set store.BulkSet) (done <-chan error, deleted *int) {
	ch, n := make(chan error, 1), new(int)
	set.Cutoff = time.Now().Add(time.Minute)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ch <- st.InTx(ctx, func(tx *store.Tx) (err error) {
			*n, err = tx.DeleteConversations(ctx, ws, set, 1000)
			return err
		})
	}()
	return ch, n
}

// TestABulkSoftDeleteLocksContactsInIDOrder: a bulk soft delete of contacts and a writer
// updating two of them in id order (a CSV import, which locks the contacts it updates in id
// order first) cannot deadlock. Taking its rows in the order it found them, the delete could
// lock the higher id first (in one of the two orders of creation), then wait for the lower
// one the writer holds, while the writer waited for the higher one (40P01). In id order, it
// waits for the lower one holding nothing, and deletes both once the writer has committed.
func TestABulkSoftDeleteLocksContactsInIDOrder(t *testing.T) {
	bulkWhileAWriterUpdatesInIDOrder(t, "contacts",
		`INSERT INTO contacts (id, workspace_id, name) VALUES ($1, $2, 'Eve')`,
		`UPDATE contacts SET name = 'Eve B.', updated_at = now() WHERE id = $1`,
		func(ctx context.Context, tx *store.Tx, ws uuid.UUID) (int, error) {
			return tx.SoftDeleteContacts(ctx, ws, store.BulkSet{Cutoff: time.Now().Add(time.Minute)}, 1000)
		})
}

// TestABulkCancelLocksCampaignsInIDOrder: a bulk cancel of campaigns and a writer updating two
// of them in id order (a batch of delivery reports, which locks the campaigns it counts on in
// id order first) cannot deadlock: in id order, the cancel waits for the lower one holding
// nothing (in the order its scan found them, it could hold the higher one: 40P01).
func TestABulkCancelLocksCampaignsInIDOrder(t *testing.T) {
	bulkWhileAWriterUpdatesInIDOrder(t, "campaigns",
		`INSERT INTO campaigns (id, workspace_id, name, status) VALUES ($1, $2, 'Promo', 'running')`,
		`UPDATE campaigns SET delivered_count = delivered_count + 1 WHERE id = $1`,
		func(ctx context.Context, tx *store.Tx, ws uuid.UUID) (int, error) {
			return tx.CancelCampaigns(ctx, ws, store.BulkSet{Cutoff: time.Now().Add(time.Minute), Statuses: []string{"scheduled", "running", "paused"}}, 1000)
		})
}

// bulkWhileAWriterUpdatesInIDOrder creates two rows of table with insert ($1 the id, $2 the
// workspace), in each of the two orders of creation (so that either plan's scan order meets
// the ids' order and its reverse), has a writer update the lower one (update, $1 the id), runs
// bulk, and has the writer update the higher one once bulk waits. Both must commit, bulk on
// both rows.
func bulkWhileAWriterUpdatesInIDOrder(t *testing.T, table, insert, update string, bulk func(ctx context.Context, tx *store.Tx, ws uuid.UUID) (int, error)) {
	t.Helper()
	st := storetest.New(t)
	ctx := context.Background()
	for _, highFirst := range []bool{true, false} {
		low, high := uuid.New(), uuid.New()
		if bytes.Compare(low[:], high[:]) > 0 {
			low, high = high, low
		}
		created := []uuid.UUID{low, high}
		if highFirst {
			created = []uuid.UUID{high, low}
		}
		w, err := st.CreateWorkspace(ctx, fmt.Sprintf("%s-locks-%t", table, highFirst), 0)
		require.NoError(t, err)
		for _, id := range created { // one transaction each: the later one is the newer
			_, err := st.Pool().Exec(ctx, insert, id, w.ID)
			require.NoError(t, err)
		}

		writer, err := st.Pool().Begin(ctx)
		require.NoError(t, err)
		_, err = writer.Exec(ctx, update, low)
		require.NoError(t, err)
		done, n := make(chan error, 1), 0
		go func() {
			done <- st.InTx(ctx, func(tx *store.Tx) (err error) {
				n, err = bulk(ctx, tx, w.ID)
				return err
			})
		}()
		storetest.WaitBlockedOrDone(t, st, nil)
		_, err = writer.Exec(ctx, update, high)
		require.NoError(t, err, "the writer's second update")
		require.NoError(t, writer.Commit(ctx))
		require.NoError(t, <-done, "the bulk batch on %s (created high first: %t)", table, highFirst)
		require.Equal(t, 2, n)
	}
}
