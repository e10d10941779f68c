package converse_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/converse"
	"switchboard/store"
	"switchboard/store/storetest"
)

// TestContactDetailsAndAnErasureOfTheContactWaitForEachOther: a message giving the contact
// details an escalation asked for writes them into the conversation's contact, in the
// transaction that appends the message; an erasure of that contact locks the contact, then
// its conversations. The turn writes the contact before its append locks the conversation,
// so whichever reaches the contact first goes on and the other waits: here the turn, held
// after its append, got there first, and the erasure that came while it was held erases what
// it wrote once it commits.
//
// With the contact written after the append (the order before), the erasure locked the
// contact and waited for the conversation while the turn waited for the contact:
// PostgreSQL's deadlock detector aborted one of them (40P01).
func TestContactDetailsAndAnErasureOfTheContactWaitForEachOther(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, contactAgentYAML)
	first := w.chatAs(t, id, "", "Hello", &converse.Contact{Name: "Grace"}) // a contact, by name only
	ask := w.chat(t, id, first.ConversationID, "I want a REFUND.")
	require.Equal(t, &converse.Escalation{Trigger: "keyword_match", Action: "collect_contact"}, ask.Escalation)
	state := w.conversation(t, first.ConversationID)
	require.True(t, state.AwaitingContact, "no email or phone to reach Grace at: asked for")
	contact := state.ContactID
	require.NotNil(t, contact)

	st := w.store
	release := storetest.HoldWrites(t, st, "messages", "INSERT", "") // the turn, once it has appended

	var answer *converse.Answer
	answered, turnErr := storetest.InBackground(func(ctx context.Context) (err error) {
		answer, err = w.svc.Chat(ctx, converse.Request{WorkspaceID: w.workspace.ID, AgentID: id,
			ConversationID: first.ConversationID, Message: "Call me at +1 555 010 2030"})
		return err
	})
	storetest.WaitBlockedOrDone(t, st, answered) // the turn is held after its append
	erased, eraseErr := storetest.InBackground(func(ctx context.Context) error {
		return st.InTx(ctx, func(tx *store.Tx) error { _, err := tx.EraseContact(ctx, w.workspace.ID, *contact); return err })
	})
	storetest.WaitWaitersOrDone(t, st, 2, erased) // and the erasure for what the turn holds
	release()
	<-answered
	<-erased
	require.NoError(t, *turnErr, "the turn")
	require.NoError(t, *eraseErr, "the erasure")
	require.Contains(t, answer.Reply, "+1 555 010 2030")
	rulesAnswered(t, answer) // the details were collected by the rules, in the turn's transaction

	var name, email, phone *string
	var erasedAt *time.Time
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT name, email, phone, erased_at FROM contacts WHERE id = $1`, *contact).
		Scan(&name, &email, &phone, &erasedAt))
	require.NotNil(t, erasedAt)
	require.Equal(t, []*string{nil, nil, nil}, []*string{name, email, phone}, "the details the turn wrote are erased after it")
	var words int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id
		WHERE c.short_id = $1 AND m.content <> ''`, first.ConversationID).Scan(&words))
	require.Zero(t, words, "the turn's messages are blanked with the others")
}
