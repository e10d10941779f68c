package store_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestMessagesWithUsage: a turn's reply carries the model, tokens and cost of the charge
// written in its transaction; messages without a charge of their own carry none, and two
// charges of the conversation in one transaction are not attributed by guess.
func TestMessagesWithUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "usage", 5_000_000_000)
	require.NoError(t, err)
	conv, err := s.CreateConversation(ctx, w.ID, "api")
	require.NoError(t, err)
	require.NoError(t, s.AppendMessages(ctx, w.ID, conv.ID, []store.Message{{Role: "assistant", Content: "Hello!"}}), "a greeting")

	turn := func(charges int, msgs ...store.Message) {
		t.Helper()
		require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.AppendMessages(ctx, w.ID, conv.ID, msgs); err != nil {
				return err
			}
			for range charges {
				_, _, err := tx.Settle(ctx, w.ID, &store.Charge{AmountNanoUSD: 412_345, Category: "model_usage", Model: "beta-5.4-mini",
					InputTokens: 412, OutputTokens: 38, ConversationID: &conv.ID}, func(int64) []store.NewEvent { return nil })
				if err != nil {
					return err
				}
			}
			return nil
		}))
	}
	call := json.RawMessage(`[{"id":"c1","name":"lookup_order","arguments":{"order":"1234"}}]`)
	result := json.RawMessage(`[{"call_id":"c1","name":"lookup_order","content":"{\"status\":\"shipped\"}"}]`)
	turn(1, store.Message{Role: "user", Content: "Where is 1234?"}, store.Message{Role: "assistant", ToolCalls: call},
		store.Message{Role: "tool", ToolResults: result}, store.Message{Role: "assistant", Content: "It shipped."})
	turn(2, store.Message{Role: "user", Content: "Two at once"}, store.Message{Role: "assistant", Content: "Ambiguous."})

	msgs, err := s.MessagesWithUsage(ctx, w.ID, conv.ID)
	require.NoError(t, err)
	require.Len(t, msgs, 7)
	var with []string
	for _, m := range msgs {
		if m.Usage != nil {
			with = append(with, m.Content)
		}
	}
	require.Equal(t, []string{"It shipped."}, with, "only the first turn's reply")
	require.Equal(t, &store.TurnUsage{Model: "beta-5.4-mini", InputTokens: 412, OutputTokens: 38, CostNanoUSD: 412_345}, msgs[4].Usage)
	require.JSONEq(t, string(call), string(msgs[2].ToolCalls))

	other, err := s.MessagesWithUsage(ctx, uuid.New(), conv.ID)
	require.NoError(t, err)
	require.Empty(t, other, "another workspace reads nothing")
}
