package converse_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/store"
)

// TestAHistoryIsNeverSentFromAStaleCopy: a turn continuing a conversation has the database
// send back only the messages the runtime has not kept (historyCache), and sends the model
// the window as the database holds it now. The erasure here is written straight to the
// database, as another replica would write it: the next turn sends none of the erased words.
func TestAHistoryIsNeverSentFromAStaleCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, rulesAgentYAML)
	vendor := w.vendors[catalog.Gamma]
	lastSent := func() []string {
		reqs := vendor.Requests()
		var texts []string
		for _, m := range reqs[len(reqs)-1].Messages {
			texts = append(texts, string(m.Role)+": "+m.Text)
		}
		return texts[1:] // Gemini's adapter opens with a user turn of its own
	}

	conv := w.chat(t, id, "", "Where is my order?").ConversationID
	from, to := w.svc.KeptHistory(w.workspace.ID, conv)
	require.Equal(t, [2]int{1, 3}, [2]int{from, to}, "the greeting, read back with the opening, and the turn's own two messages")
	w.chat(t, id, conv, "It is late.")
	w.chat(t, id, conv, "Order 42.")
	from, to = w.svc.KeptHistory(w.workspace.ID, conv)
	require.Equal(t, [2]int{1, 7}, [2]int{from, to}, "the window the last turn read, and what it wrote")
	require.Zero(t, w.svc.StaleHistoryReads(), "every kept message, the turns' own too, stood for its row")
	require.Equal(t, []string{"assistant: Hi, I'm Rita.", "user: Where is my order?", "assistant: reply to: Where is my order?",
		"user: It is late.", "assistant: reply to: It is late.", "user: Order 42."}, lastSent())

	// Another replica's erasure blanks the first question: its row's version changes.
	c, err := w.store.ConversationByRef(ctx, w.workspace.ID, conv)
	require.NoError(t, err)
	_, err = w.store.Pool().Exec(ctx, `UPDATE messages SET content = '' WHERE conversation_id = $1 AND content = 'Where is my order?'`, c.ID)
	require.NoError(t, err)
	w.chat(t, id, conv, "Anyone?")
	require.Equal(t, int64(1), w.svc.StaleHistoryReads(), "the blanked row's version is not its copy's: the window was read again")
	require.Equal(t, []string{"assistant: Hi, I'm Rita.", "user: ", "assistant: reply to: Where is my order?",
		"user: It is late.", "assistant: reply to: It is late.", "user: Order 42.", "assistant: reply to: Order 42.", "user: Anyone?"}, lastSent())

	// By its UUID, the same conversation and the same window.
	w.chat(t, id, c.ID.String(), "Hello?")
	sent := lastSent()
	require.Equal(t, "user: ", sent[1])
	require.Equal(t, "user: Hello?", sent[len(sent)-1])
	require.Len(t, sent, 10)
	_, to = w.svc.KeptHistory(w.workspace.ID, c.ID.String())
	require.Equal(t, 11, to)
}

// TestAMessageAppendedByAnotherWriterIsReadNotAssumed: what a person or another replica
// appends to a conversation between two turns (here straight to the database) comes from the
// database on the next turn, after the messages the previous turn kept of its own.
func TestAMessageAppendedByAnotherWriterIsReadNotAssumed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, rulesAgentYAML)
	vendor := w.vendors[catalog.Gamma]

	conv := w.chat(t, id, "", "Where is my order?").ConversationID
	c, err := w.store.ConversationByRef(ctx, w.workspace.ID, conv)
	require.NoError(t, err)
	require.NoError(t, w.store.AppendMessages(ctx, w.workspace.ID, c.ID, []store.Message{{Role: "assistant", Content: "Sam here, from the team."}}))
	w.chat(t, id, conv, "Thanks, Sam.")
	reqs := vendor.Requests()
	var texts []string
	for _, m := range reqs[len(reqs)-1].Messages[1:] {
		texts = append(texts, string(m.Role)+": "+m.Text)
	}
	// (Gemini's adapter sends two assistant messages in a row as one.)
	require.Equal(t, []string{"assistant: Hi, I'm Rita.", "user: Where is my order?",
		"assistant: reply to: Where is my order?\n\nSam here, from the team.", "user: Thanks, Sam."}, texts)
	require.Zero(t, w.svc.StaleHistoryReads())
	from, to := w.svc.KeptHistory(w.workspace.ID, conv)
	require.Equal(t, [2]int{1, 6}, [2]int{from, to})
}
