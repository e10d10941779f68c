package converse

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/llm"
	"switchboard/store"
)

// TestATurnKeepsItsOwnMessagesOnlyWhenTheyFollowTheCopy: extend keeps what a turn appended
// only right after the kept window (a gap would be a row elided without a copy), and only for
// the conversation the copy is of.
func TestATurnKeepsItsOwnMessagesOnlyWhenTheyFollowTheCopy(t *testing.T) {
	ws, conv := uuid.New(), uuid.New()
	var c historyCache
	c.put(&historyEntry{keys: [2]historyKey{{ws, conv.String()}, {ws, "mc-test"}}, conv: conv,
		msgs: []keptMessage{{seq: 1, version: 10, bytes: 3}, {seq: 2, version: 10, bytes: 4}}, bytes: 7})
	appended := func(seqs ...int) []agent.AppendedMessage {
		out := make([]agent.AppendedMessage, len(seqs))
		for i, s := range seqs {
			out[i] = agent.AppendedMessage{WrittenMessage: store.WrittenMessage{Seq: s, Version: 20},
				Message: llm.Message{Role: llm.RoleUser, Text: "m"}, Bytes: 1}
		}
		return out
	}
	kept := func() [2]int { from, to := c.known(ws, "mc-test"); return [2]int{from, to} }

	c.extend(ws, conv, appended(4, 5)) // seq 3 went to another writer
	require.Equal(t, [2]int{1, 2}, kept())
	c.extend(ws, uuid.New(), appended(3, 4))
	require.Equal(t, [2]int{1, 2}, kept(), "another conversation's messages")
	c.extend(ws, conv, appended(3, 4))
	require.Equal(t, [2]int{1, 4}, kept())
	require.Equal(t, 9, c.bytes)
	from, to := c.known(ws, conv.String())
	require.Equal(t, [2]int{1, 4}, [2]int{from, to}, "by its UUID as by its short id")
}
