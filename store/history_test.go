package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestHistoryWindowKeepsTheNewestThatFit: the window is the newest messages, in order, at most
// so many and at most so many bytes counted from the newest; older ones go first.
func TestHistoryWindowKeepsTheNewestThatFit(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "history", 1)
	require.NoError(t, err)
	conv, err := s.CreateConversation(ctx, w.ID, "api")
	require.NoError(t, err)
	var msgs []store.Message
	for i := 1; i <= 20; i++ {
		role := "user"
		if i%2 == 0 {
			role = "assistant"
		}
		msgs = append(msgs, store.Message{Role: role, Content: fmt.Sprintf("m%02d-%s", i, strings.Repeat("x", 6))}) // 10 bytes each
	}
	require.NoError(t, s.AppendMessages(ctx, w.ID, conv.ID, msgs))
	contents := func(ms []store.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Content[:3])
		}
		return out
	}

	all, err := s.HistoryWindow(ctx, w.ID, conv.ID, 100, 1<<20)
	require.NoError(t, err)
	require.Len(t, all, 20)
	require.Equal(t, "m01", all[0].Content[:3], "in order, oldest first")

	got, err := s.HistoryWindow(ctx, w.ID, conv.ID, 3, 1<<20)
	require.NoError(t, err)
	require.Equal(t, []string{"m18", "m19", "m20"}, contents(got), "at most 3, the newest")

	got, err = s.HistoryWindow(ctx, w.ID, conv.ID, 100, 45)
	require.NoError(t, err)
	require.Equal(t, []string{"m17", "m18", "m19", "m20"}, contents(got), "45 bytes hold the newest four")

	got, err = s.HistoryWindow(ctx, w.ID, conv.ID, 100, 9)
	require.NoError(t, err)
	require.Empty(t, got, "not even the newest fits")

	other, err := s.CreateWorkspace(ctx, "history-other", 1)
	require.NoError(t, err)
	got, err = s.HistoryWindow(ctx, other.ID, conv.ID, 100, 1<<20)
	require.NoError(t, err)
	require.Empty(t, got, "another workspace sees nothing")
}

// TestAgentTurnStateReadsTheStateAndTheWindowAtOnce: the conversation by short id or UUID,
// its state, its agent row's version (changed by an update) and the window HistoryWindow
// reads; none for another workspace.
func TestAgentTurnStateReadsTheStateAndTheWindowAtOnce(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "turnstate", 1)
	require.NoError(t, err)
	a, _, err := s.CreateAgent(ctx, w.ID, "Ada", []byte(`{}`), nil)
	require.NoError(t, err)
	conv, err := s.CreateConversation(ctx, w.ID, "api")
	require.NoError(t, err)
	require.NoError(t, s.OpenAgentConversation(ctx, w.ID, conv.ID, a.ID, nil, nil))

	empty, err := s.AgentTurnState(ctx, w.ID, store.TurnRead{Ref: conv.ShortID, MaxMessages: 100, MaxBytes: 1 << 20})
	require.NoError(t, err)
	require.Equal(t, conv.ID, empty.Conversation.ID)
	require.Equal(t, &a.ID, empty.Conversation.AgentID)
	require.Equal(t, "open", empty.Conversation.Status)
	require.Empty(t, empty.History, "no message yet")
	require.NotZero(t, empty.AgentVersion)

	var msgs []store.Message
	for i := 1; i <= 6; i++ {
		msgs = append(msgs, store.Message{Role: "user", Content: fmt.Sprintf("m%02d-%s", i, strings.Repeat("x", 6))})
	}
	msgs[5].ToolResults = []byte(`{"a": 1}`)
	require.NoError(t, s.AppendMessages(ctx, w.ID, conv.ID, msgs))
	for _, window := range []struct {
		messages int
		bytes    int64
	}{{100, 1 << 20}, {3, 1 << 20}, {100, 35}, {100, 5}} {
		want, err := s.HistoryWindow(ctx, w.ID, conv.ID, window.messages, window.bytes)
		require.NoError(t, err)
		got, err := s.AgentTurnState(ctx, w.ID, store.TurnRead{Ref: conv.ID.String(), MaxMessages: window.messages, MaxBytes: window.bytes})
		require.NoError(t, err)
		require.Equal(t, want, messagesOf(got.History), "the window of %+v", window)
		require.Equal(t, empty.AgentVersion, got.AgentVersion)
	}

	// The conversation's state comes whole with a window of many rows (only its first row
	// carries it): its labels, its contact, as AgentConversationState reads it.
	name, email := "Grace", "grace@example.com"
	contact, err := s.CreateContact(ctx, w.ID, store.Contact{Name: &name, Email: &email})
	require.NoError(t, err)
	require.NoError(t, s.SetConversationContact(ctx, w.ID, conv.ID, contact))
	_, err = s.AddConversationLabel(ctx, w.ID, conv.ID, "vip")
	require.NoError(t, err)
	state, err := s.AgentConversationState(ctx, w.ID, conv.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"vip"}, state.Labels)
	require.Equal(t, &name, state.Contact.Name)
	withWindow, err := s.AgentTurnState(ctx, w.ID, store.TurnRead{Ref: conv.ShortID, MaxMessages: 100, MaxBytes: 1 << 20, Search: "anything"})
	require.NoError(t, err)
	require.Len(t, withWindow.History, 6)
	require.Equal(t, state, withWindow.Conversation)

	// Elided: the seqs the caller holds come with their seq and version only, the window
	// the same; an erasure's blanking changes the version of every row it blanks.
	full, err := s.AgentTurnState(ctx, w.ID, store.TurnRead{Ref: conv.ShortID, MaxMessages: 100, MaxBytes: 1 << 20})
	require.NoError(t, err)
	part, err := s.AgentTurnState(ctx, w.ID, store.TurnRead{Ref: conv.ShortID, MaxMessages: 100, MaxBytes: 1 << 20, KnownFrom: 2, KnownTo: 6})
	require.NoError(t, err)
	require.Len(t, part.History, 6)
	for i, m := range part.History {
		require.Equal(t, full.History[i].Seq, m.Seq)
		require.Equal(t, i+1, m.Seq)
		require.Equal(t, full.History[i].Version, m.Version)
		require.NotZero(t, m.Version)
		require.Equal(t, full.History[i].Role, m.Role)
		if m.Seq >= 2 {
			require.True(t, m.Elided, "seq %d", m.Seq)
			require.Equal(t, store.Message{Role: "user"}, m.Message, "seq %d: no content", m.Seq)
		} else {
			require.False(t, m.Elided)
			require.Equal(t, full.History[i], m)
		}
	}
	require.False(t, full.History[5].Elided)
	require.JSONEq(t, `{"a": 1}`, string(full.History[5].ToolResults))
	_, err = s.Pool().Exec(ctx, `UPDATE messages SET content = '' WHERE conversation_id = $1 AND seq = 3`, conv.ID)
	require.NoError(t, err)
	blanked, err := s.AgentTurnState(ctx, w.ID, store.TurnRead{Ref: conv.ShortID, MaxMessages: 100, MaxBytes: 1 << 20, KnownFrom: 1, KnownTo: 6})
	require.NoError(t, err)
	for i, m := range blanked.History {
		require.Equal(t, m.Seq == 3, m.Version != full.History[i].Version, "seq %d: a changed row, a new version", m.Seq)
	}

	_, err = s.UpdateAgent(ctx, w.ID, a.ID, store.AgentUpdate{Name: "Ada 2", Status: a.Status, Blueprint: a.Blueprint})
	require.NoError(t, err)
	after, err := s.AgentTurnState(ctx, w.ID, store.TurnRead{Ref: conv.ShortID, MaxMessages: 100, MaxBytes: 1 << 20})
	require.NoError(t, err)
	require.NotEqual(t, empty.AgentVersion, after.AgentVersion, "an update changes the version")

	other, err := s.CreateWorkspace(ctx, "turnstate-other", 1)
	require.NoError(t, err)
	_, err = s.AgentTurnState(ctx, other.ID, store.TurnRead{Ref: conv.ShortID, MaxMessages: 100, MaxBytes: 1 << 20})
	require.ErrorIs(t, err, store.ErrNotFound, "another workspace sees nothing")
	_, err = s.AgentTurnState(ctx, w.ID, store.TurnRead{Ref: "mc-nosuch", MaxMessages: 100, MaxBytes: 1 << 20})
	require.ErrorIs(t, err, store.ErrNotFound)
}

func messagesOf(w []store.WindowMessage) []store.Message {
	out := make([]store.Message, len(w))
	for i, m := range w {
		out[i] = m.Message
	}
	return out
}
