package channels

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/shortid"
	"switchboard/store"
	"switchboard/store/storetest"
)

// TestASendsFinishWaitsForAnErasureInsteadOfDeadlocking: a send's finish writes its message's
// row, then the workspace's, then the ledger row that names the conversation (its KEY SHARE);
// an erasure of the conversation's contact locks the conversation, then blanks the message's
// row, then takes the workspace's. The finish takes its conversations' KEY SHARE first, so
// that whichever of the two reaches the conversation first goes on and the other waits: here
// the finish, held at the workspace's row by a batch of turns settling, gets there first, and
// the erasure runs once it has committed, blanking the body it recorded.
//
// With the message's row first (the order before), the erasure locked the conversation and
// waited for the message's row while the finish waited for the conversation: PostgreSQL's
// deadlock detector aborted one of them (40P01).
func TestASendsFinishWaitsForAnErasureInsteadOfDeadlocking(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	s := New(st, nil, nil, nil, "http://switchboard.test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	w, err := st.CreateWorkspace(ctx, "finish-erasure", 1_000_000_000)
	require.NoError(t, err)
	c, contact, conv, reply := sendingReply(t, st, w.ID)

	settling, err := st.Pool().Begin(ctx) // a batch of turns settling holds the workspace's row
	require.NoError(t, err)
	defer func() { _ = settling.Rollback(ctx) }()
	_, err = settling.Exec(ctx, `SELECT id FROM workspaces WHERE id = $1 FOR NO KEY UPDATE`, w.ID)
	require.NoError(t, err)

	finished, finishErr := storetest.InBackground(func(ctx context.Context) error { return s.finish(ctx, c, reply, "SM-finish-1", nil) })
	storetest.WaitBlockedOrDone(t, st, nil) // the finish waits for the workspace's row
	erased, eraseErr := storetest.InBackground(func(ctx context.Context) error {
		return st.InTx(ctx, func(tx *store.Tx) error { _, err := tx.EraseContact(ctx, w.ID, contact); return err })
	})
	storetest.WaitWaitersOrDone(t, st, 2, erased) // and the erasure for what the finish holds
	require.NoError(t, settling.Commit(ctx))
	<-finished
	<-erased
	require.NoError(t, *finishErr, "the finish")
	require.NoError(t, *eraseErr, "the erasure")

	var status, body, provider string
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT status, body, coalesce(provider_message_id, '') FROM channel_messages WHERE id = $1`,
		reply.ID).Scan(&status, &body, &provider))
	require.Equal(t, []string{"queued", "", "SM-finish-1"}, []string{status, body, provider}, "recorded by the finish, then blanked by the erasure")
	var charges, linked int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*), count(conversation_id) FROM ledger WHERE workspace_id = $1 AND category = 'sms'`,
		w.ID).Scan(&charges, &linked))
	require.Equal(t, 1, charges, "the send is charged once")
	require.Zero(t, linked, "the erasure, after the finish, unlinked its charge from the conversation %s", conv)
}

// TestASendWhoseConversationWasDeletedIsRecordedAndCharged: the conversation of a reply at
// the carrier is deleted (a bulk delete, the retention job) before the carrier answers; the
// answer is still recorded and the send charged, its charge naming no conversation. (It used
// to fail, the charge looking up the conversation it named.)
func TestASendWhoseConversationWasDeletedIsRecordedAndCharged(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	s := New(st, nil, nil, nil, "http://switchboard.test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	w, err := st.CreateWorkspace(ctx, "finish-deleted", 1_000_000_000)
	require.NoError(t, err)
	c, _, conv, reply := sendingReply(t, st, w.ID)
	_, err = st.Pool().Exec(ctx, `DELETE FROM conversations WHERE id = $1`, conv)
	require.NoError(t, err)

	require.NoError(t, s.finish(ctx, c, reply, "SM-finish-2", nil))
	var status string
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT status FROM channel_messages WHERE id = $1`, reply.ID).Scan(&status))
	require.Equal(t, "queued", status)
	var charges, linked int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*), count(conversation_id) FROM ledger WHERE workspace_id = $1 AND category = 'sms'`,
		w.ID).Scan(&charges, &linked))
	require.Equal(t, []int{1, 0}, []int{charges, linked}, "charged once, naming no conversation")
}

// sendingReply is an SMS channel of ws with a contact's conversation and the agent's reply in
// it, handed to the carrier (`sending`) and waiting for its answer.
func sendingReply(t *testing.T, st *store.Store, ws uuid.UUID) (c store.Channel, contact, conv uuid.UUID, reply store.ChannelMessage) {
	ctx := context.Background()
	number := "+14155550100"
	c, err := st.CreateChannel(ctx, ws, store.ChannelWrite{ID: store.NewChannelID(), Provider: "sms", Name: "Support line",
		Config: json.RawMessage(`{}`), Status: "connected", InboundToken: "tok-finish-erasure", Address: &number})
	require.NoError(t, err)
	require.NoError(t, st.Pool().QueryRow(ctx, `INSERT INTO contacts (workspace_id, name, phone) VALUES ($1, 'Eve', '+14155550111') RETURNING id`,
		ws).Scan(&contact))
	require.NoError(t, st.Pool().QueryRow(ctx, `INSERT INTO conversations (workspace_id, short_id, channel, contact_id, message_seq)
		VALUES ($1, $2, 'sms', $3, 0) RETURNING id`, ws, shortid.New(shortid.Conversation), contact).Scan(&conv))
	var id uuid.UUID
	require.NoError(t, st.Pool().QueryRow(ctx, `INSERT INTO channel_messages (workspace_id, channel_id, direction, remote, local, body, segments, status, conversation_id)
		VALUES ($1, $2, 'outbound', '+14155550111', $3, 'Your order ships on Monday, Eve.', 1, 'sending', $4) RETURNING id`,
		ws, c.ID, number, conv).Scan(&id))
	reply, err = st.ChannelMessageByID(ctx, ws, id)
	require.NoError(t, err)
	return c, contact, conv, reply
}

// TestAReplyNeedingATemplateWaitsForADeleteOfItsConversation: a reply outside the app's
// window is failed (its message's row), then its conversation's thread is marked; deleting
// the conversation locks it, then deletes its thread, then clears its messages' link to it.
// The reply takes the conversation's KEY SHARE first, so the delete waits for it instead of
// each holding the row the other needs (40P01 before: the reply's job failed and was retried,
// or the delete failed).
func TestAReplyNeedingATemplateWaitsForADeleteOfItsConversation(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	s := New(st, nil, nil, nil, "http://switchboard.test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	w, err := st.CreateWorkspace(ctx, "template-delete", 1_000_000_000)
	require.NoError(t, err)
	c, _, conv, reply := sendingReply(t, st, w.ID)
	_, err = st.Pool().Exec(ctx, `UPDATE channel_messages SET status = 'pending' WHERE id = $1`, reply.ID)
	require.NoError(t, err)
	reply.Status = "pending"
	_, err = st.Pool().Exec(ctx, `INSERT INTO conversation_threads (conversation_id, workspace_id, channel_id, remote) VALUES ($1, $2, $3, $4)`,
		conv, w.ID, c.ID, reply.Remote)
	require.NoError(t, err)

	release := storetest.HoldWrites(t, st, "channel_messages", "UPDATE", "NEW.status = 'failed'") // the reply, once it has failed the message
	failed, failErr := storetest.InBackground(func(ctx context.Context) error { return s.needsTemplate(ctx, c, reply) })
	storetest.WaitBlockedOrDone(t, st, failed)
	deleted, deleteErr := storetest.InBackground(func(ctx context.Context) error {
		_, err := st.Pool().Exec(ctx, `DELETE FROM conversations WHERE id = $1`, conv)
		return err
	})
	storetest.WaitWaitersOrDone(t, st, 2, deleted) // the delete waits for what the reply holds
	release()
	<-failed
	<-deleted
	require.NoError(t, *failErr, "the reply")
	require.NoError(t, *deleteErr, "the delete")

	var status, reason string
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT status, coalesce(reason, '') FROM channel_messages WHERE id = $1`, reply.ID).Scan(&status, &reason))
	require.Equal(t, []string{"failed", ReasonNeedsTemplate}, []string{status, reason})
	var threads int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM conversation_threads WHERE conversation_id = $1`, conv).Scan(&threads))
	require.Zero(t, threads, "the thread went with its conversation, after the reply")
}

// TestDeletingAChannelWhileItsReplyIsWrittenSucceeds: a reply's job moves the inbound message
// to its state, then writes the reply (whose reference takes the channel's KEY SHARE); a
// delete of the channel locks the channel, then clears its messages' link to it. The two take
// the rows in opposite orders, and the reply's first row is on the hot path of every reply,
// so no lock is added there: PostgreSQL aborts one of the two (the reply's job is retried) and
// the delete runs again, so it succeeds (a 500 before, when the delete was the one aborted).
func TestDeletingAChannelWhileItsReplyIsWrittenSucceeds(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	s := New(st, nil, nil, nil, "http://switchboard.test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	w, err := st.CreateWorkspace(ctx, "channel-delete", 1_000_000_000)
	require.NoError(t, err)
	c, _, conv, reply := sendingReply(t, st, w.ID)
	var inbound uuid.UUID
	require.NoError(t, st.Pool().QueryRow(ctx, `INSERT INTO channel_messages (workspace_id, channel_id, direction, remote, local, body, segments, status, conversation_id)
		VALUES ($1, $2, 'inbound', $3, $4, 'Hello?', 1, 'received', $5) RETURNING id`, w.ID, c.ID, reply.Remote, reply.Local, conv).Scan(&inbound))

	held, resume := make(chan struct{}), make(chan struct{})
	replied, replyErr := storetest.InBackground(func(ctx context.Context) error {
		return st.InTx(ctx, func(tx *store.Tx) error {
			err := tx.SetChannelMessageState(ctx, w.ID, inbound, "answered", nil, &conv)
			close(held)
			if err != nil {
				return err
			}
			<-resume
			_, _, err = tx.ClaimOutbound(ctx, w.ID, store.OutboundMessage{ChannelID: c.ID, Remote: reply.Remote, Local: reply.Local,
				Body: "Hi!", Segments: 1, ConversationID: &conv, ReplyTo: &inbound})
			return err
		})
	})
	<-held
	deleted, deleteErr := storetest.InBackground(func(ctx context.Context) error { _, err := s.Delete(ctx, w.ID, c.ID); return err })
	storetest.WaitBlockedOrDone(t, st, deleted) // the delete waits for the inbound message's row
	close(resume)
	<-replied
	<-deleted
	require.NoError(t, *deleteErr, "the delete")
	if *replyErr != nil {
		require.True(t, store.Deadlocked(*replyErr), "the reply fails only as the one aborted: %v", *replyErr)
	}
	_, err = st.ChannelByID(ctx, w.ID, c.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}
