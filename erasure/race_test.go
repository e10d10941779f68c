package erasure_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard/erasure"
	"switchboard/shortid"
	"switchboard/store"
	"switchboard/store/storetest"
)

// appendEvent is an event of ws naming id in its data, its seq taken from the workspace's
// row (locked until the transaction ends), as every writer of events takes it.
const appendEvent = `WITH s AS (UPDATE workspaces SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq)
	INSERT INTO events (workspace_id, seq, short_id, type, envelope)
	SELECT $1, s.event_seq, 'evt_' || s.event_seq || '_' || md5(random()::text), 'turn.completed',
	       '{"type":"turn.completed","data":{"id":"' || $2 || '","text":"my card is 4242"}}' FROM s`

// newWorkspace is a workspace keeping its conversations for days (nil: for ever).
func newWorkspace(t *testing.T, st *store.Store, days *int) uuid.UUID {
	ctx := context.Background()
	w, err := st.CreateWorkspace(ctx, "erasure", 0)
	require.NoError(t, err)
	if days != nil {
		_, err = st.SetWorkspaceRetention(ctx, w.ID, days)
		require.NoError(t, err)
	}
	return w.ID
}

// thirtyDays is a retention period that the conversations made 40 days ago are past.
func thirtyDays() *int { d := 30; return &d }

// contactWithConversation is a contact of ws with a conversation holding one message and an
// event naming the conversation.
func contactWithConversation(t *testing.T, st *store.Store, ws uuid.UUID) (contact, conv uuid.UUID, short string) {
	ctx := context.Background()
	require.NoError(t, st.Pool().QueryRow(ctx, `INSERT INTO contacts (workspace_id, name, email) VALUES ($1, 'Eve', 'eve@example.com') RETURNING id`, ws).Scan(&contact))
	short = shortid.New(shortid.Conversation)
	require.NoError(t, st.Pool().QueryRow(ctx, `INSERT INTO conversations (workspace_id, short_id, channel, contact_id, message_seq)
		VALUES ($1, $2, 'sms', $3, 1) RETURNING id`, ws, short, contact).Scan(&conv))
	_, err := st.Pool().Exec(ctx, `INSERT INTO messages (workspace_id, conversation_id, seq, role, content) VALUES ($1, $2, 1, 'user', 'hello, I am Eve')`, ws, conv)
	require.NoError(t, err)
	_, err = st.Pool().Exec(ctx, appendEvent, ws, short)
	require.NoError(t, err)
	return contact, conv, short
}

// eraseWhile erases contact while writer, an open transaction, holds what it wrote; it
// commits the writer once the erasure waits for it (or has finished without waiting) and
// returns the erasure's report.
func eraseWhile(t *testing.T, st *store.Store, ws, contact uuid.UUID, writer func(ctx context.Context, tx pgx.Tx)) erasure.Report {
	t.Helper()
	ctx := context.Background()
	tx, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	writer(ctx, tx)

	var report erasure.Report
	done, eraseErr := storetest.InBackground(func(ctx context.Context) (err error) {
		report, err = erasure.New(st).EraseContact(ctx, ws, contact)
		return err
	})
	storetest.WaitBlockedOrDone(t, st, done)
	require.NoError(t, tx.Commit(ctx))
	<-done
	require.NoError(t, *eraseErr)
	return report
}

// unerased counts ws's events naming id whose data is not erased.
func unerased(t *testing.T, st *store.Store, ws uuid.UUID, id string) int {
	var n int
	require.NoError(t, st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM events
		WHERE workspace_id = $1 AND envelope LIKE '%' || $2 || '%'`, ws, id).Scan(&n))
	return n
}

// TestAContactsErasureWaitsForATurnInFlight: a turn of the contact's conversation that has
// appended a message and its event but not committed when the erasure starts does not keep
// them: the erasure waits for it, and blanks and tombstones what it wrote. Before the
// conversations were locked, the message (acknowledged to the contact once the turn
// committed) kept its words after the erasure reported them gone.
func TestAContactsErasureWaitsForATurnInFlight(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	ws := newWorkspace(t, st, nil)
	contact, conv, short := contactWithConversation(t, st, ws)

	report := eraseWhile(t, st, ws, contact, func(ctx context.Context, turn pgx.Tx) {
		_, err := turn.Exec(ctx, `UPDATE conversations SET message_seq = message_seq + 1, updated_at = now() WHERE id = $1`, conv)
		require.NoError(t, err)
		_, err = turn.Exec(ctx, `INSERT INTO messages (workspace_id, conversation_id, seq, role, content) VALUES ($1, $2, 2, 'user', 'my card is 4242')`, ws, conv)
		require.NoError(t, err)
		_, err = turn.Exec(ctx, appendEvent, ws, short)
		require.NoError(t, err)
	})

	var messages, worded int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE content <> '') FROM messages WHERE conversation_id = $1`, conv).Scan(&messages, &worded))
	require.Equal(t, 2, messages, "the turn's message is kept, as a turn")
	require.Zero(t, worded, "no message keeps its words, the turn's included")
	require.Zero(t, unerased(t, st, ws, short), "both events are tombstoned, the turn's included")
	require.Equal(t, 2, tableRows(report, "messages"))
	require.Equal(t, 2, tableRows(report, "events"))
}

// TestAContactsErasureTombstonesAnEventAppendedMeanwhile: an event naming the contact,
// appended by a writer that locks none of its rows (a delivery status, a workflow's step) and
// not yet committed when the erasure's tombstone runs, is tombstoned too: the erasure takes
// the workspace's row lock before it commits, so the event commits first and is caught.
func TestAContactsErasureTombstonesAnEventAppendedMeanwhile(t *testing.T) {
	st := storetest.New(t)
	ws := newWorkspace(t, st, nil)
	contact, _, short := contactWithConversation(t, st, ws)
	other, _, otherShort := contactWithConversation(t, st, ws)

	report := eraseWhile(t, st, ws, contact, func(ctx context.Context, status pgx.Tx) {
		_, err := status.Exec(ctx, appendEvent, ws, contact.String())
		require.NoError(t, err)
		_, err = status.Exec(ctx, appendEvent, ws, other.String())
		require.NoError(t, err)
	})

	require.Zero(t, unerased(t, st, ws, contact.String()), "the event appended during the erasure is tombstoned")
	require.Zero(t, unerased(t, st, ws, short))
	require.Equal(t, 1, unerased(t, st, ws, other.String()), "another contact's event keeps its data")
	require.Equal(t, 1, unerased(t, st, ws, otherShort))
	require.Equal(t, 2, tableRows(report, "events"))
}

// TestSweepTombstonesAnEventAppendedDuringItsBatch: the retention job's batch takes the
// workspace's row lock before it commits, so an event naming a conversation it deletes that
// a writer appended during the batch (locking no conversation) is tombstoned, not left with
// the data of a conversation gone.
func TestSweepTombstonesAnEventAppendedDuringItsBatch(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	ws := newWorkspace(t, st, thirtyDays())
	short := shortid.New(shortid.Conversation)
	_, err := st.Pool().Exec(ctx, `INSERT INTO conversations (workspace_id, short_id, channel, updated_at)
		VALUES ($1, $2, 'api', now() - interval '40 days')`, ws, short)
	require.NoError(t, err)

	status, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = status.Rollback(ctx) }()
	_, err = status.Exec(ctx, appendEvent, ws, short)
	require.NoError(t, err)

	var swept erasure.Swept
	done, sweepErr := storetest.InBackground(func(ctx context.Context) (err error) {
		swept, err = erasure.Sweep(ctx, st, 10)
		return err
	})
	storetest.WaitBlockedOrDone(t, st, done)
	require.NoError(t, status.Commit(ctx))
	<-done
	require.NoError(t, *sweepErr)
	require.Equal(t, 1, swept.Conversations)
	require.Zero(t, unerased(t, st, ws, short), "the event appended during the batch is tombstoned")
}

func tableRows(r erasure.Report, table string) int {
	for _, c := range r.Tables {
		if c.Table == table {
			return c.Rows
		}
	}
	return -1
}

// deadlocks is how many transactions PostgreSQL has aborted to break a deadlock in the
// test's database.
func deadlocks(t *testing.T, st *store.Store) int64 {
	var n int64
	require.NoError(t, st.Pool().QueryRow(context.Background(),
		`SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`).Scan(&n))
	return n
}

// deadlockWith runs a scenario's run (an erasure or a sweep) against a writer that holds the
// workspace's row (an event appended) and, once run waits for that row, asks for the KEY
// SHARE of the scenario's conversation conv (a message inserted into it), as a charge naming a
// conversation does: the two wait for each other. run's own deadlock check comes first (it
// has waited longer), so PostgreSQL aborts run's transaction, and run must try again. Should
// the machine stall long enough for the writer to be the one aborted instead, the scenario
// did not happen: run went through on its conversation (a sweep deleted it), so a new
// scenario is set up, up to three times. It commits the writer once run has found its way
// and returns the conversation and run's error.
func deadlockWith(t *testing.T, st *store.Store, ws uuid.UUID, scenario func() (conv uuid.UUID, run func(ctx context.Context) error)) (uuid.UUID, error) {
	t.Helper()
	ctx := context.Background()
	for try := 1; try <= 3; try++ {
		conv, run := scenario()
		before := deadlocks(t, st)
		writer, err := st.Pool().Begin(ctx)
		require.NoError(t, err)
		// A failed check below must not leave the writer's connection taken: the store's
		// cleanup closes its pool, which waits for every connection, for ever.
		defer func() { _ = writer.Rollback(context.Background()) }()
		_, err = writer.Exec(ctx, appendEvent, ws, "unrelated")
		require.NoError(t, err)

		done, runErr := storetest.InBackground(run)
		storetest.WaitBlockedOrDone(t, st, done)
		_, writeErr := writer.Exec(ctx, `INSERT INTO messages (workspace_id, conversation_id, seq, role, content)
			VALUES ($1, $2, 99, 'assistant', 'charged')`, ws, conv)
		if store.Deadlocked(writeErr) { // the writer lost: set it up again
			_ = writer.Rollback(ctx)
			<-done
			require.NoError(t, *runErr)
			continue
		}
		require.NoError(t, writeErr)
		storetest.WaitBlockedOrDone(t, st, done) // run's next attempt waits for the writer's KEY SHARE, or is done
		require.NoError(t, writer.Commit(ctx))
		<-done
		require.Greater(t, deadlocks(t, st), before, "PostgreSQL broke a deadlock")
		return conv, *runErr
	}
	t.Fatal("the writer lost the deadlock three times")
	return uuid.Nil, nil
}

// TestAContactsErasureRunsAgainAfterADeadlock: an erasure PostgreSQL aborts to break a
// deadlock (with a writer charging the workspace for one of the contact's conversations)
// runs again and erases what the writer committed.
func TestAContactsErasureRunsAgainAfterADeadlock(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	ws := newWorkspace(t, st, nil)

	conv, err := deadlockWith(t, st, ws, func() (uuid.UUID, func(ctx context.Context) error) {
		contact, conv, _ := contactWithConversation(t, st, ws)
		return conv, func(ctx context.Context) error {
			_, err := erasure.New(st).EraseContact(ctx, ws, contact)
			return err
		}
	})
	require.NoError(t, err, "the erasure ran again")
	var worded int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM messages WHERE conversation_id = $1 AND content <> ''`, conv).Scan(&worded))
	require.Zero(t, worded, "the writer's message is erased with the others")
}

// TestSweepRunsABatchAgainAfterADeadlock: a retention batch PostgreSQL aborts to break a
// deadlock (with a writer charging the workspace for a conversation the batch deletes) runs
// again: the conversation, now in use by the writer, is skipped for the next run.
func TestSweepRunsABatchAgainAfterADeadlock(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	ws := newWorkspace(t, st, thirtyDays())

	conv, err := deadlockWith(t, st, ws, func() (uuid.UUID, func(ctx context.Context) error) {
		var conv uuid.UUID
		require.NoError(t, st.Pool().QueryRow(ctx, `INSERT INTO conversations (workspace_id, short_id, channel, updated_at)
			VALUES ($1, $2, 'api', now() - interval '40 days') RETURNING id`, ws, shortid.New(shortid.Conversation)).Scan(&conv))
		return conv, func(ctx context.Context) error {
			_, err := erasure.Sweep(ctx, st, 10)
			return err
		}
	})
	require.NoError(t, err, "the batch ran again")
	var kept int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM conversations WHERE id = $1`, conv).Scan(&kept))
	require.Equal(t, 1, kept, "the conversation the writer wrote to is kept")
}
