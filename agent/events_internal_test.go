package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/money"
	"switchboard/store"
)

// TestEventDataEncodesAsTheMapsDid: the turn events' data, structs since issue 17's ninth
// pass, encode to the bytes the maps they replaced encoded to (keys sorted, conversation_id
// null in an ephemeral turn.completed and absent from its spend.recorded, agent_id only for an
// agent's turn), so webhook consumers and stored envelopes see no difference.
func TestEventDataEncodesAsTheMapsDid(t *testing.T) {
	t.Parallel()
	agentID := uuid.New()
	conv := &store.Conversation{ShortID: "mc-abc", Channel: "api"}
	long := strings.Repeat("é", 250)
	for _, tc := range []struct {
		name string
		turn Turn
		out  Outcome
	}{
		{"ephemeral", Turn{Surface: "chat_completions"}, Outcome{Text: "hi", Finish: "stop"}},
		{"stored", Turn{Surface: "responses"}, Outcome{Text: long, Finish: "length", Conversation: conv}},
		{"agent", Turn{Surface: "webchat", AgentID: &agentID}, Outcome{Text: "yo", Finish: "stop", Conversation: conv}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.out.Model = catalog.Model{ID: "beta-5.4"}
			tc.out.CostNanoUSD = 1234
			var ref any
			if tc.out.Conversation != nil {
				ref = tc.out.Conversation.ShortID
			}
			completed := map[string]any{"conversation_id": ref, "surface": tc.turn.Surface, "reply_preview": preview(tc.out.Text),
				"finish_reason": string(tc.out.Finish), "model": tc.out.Model.ID}
			if tc.turn.AgentID != nil {
				completed["agent_id"] = tc.turn.AgentID.String()
			}
			requireSameJSON(t, completed, completedEvent(tc.turn, &tc.out).Data)

			spend := map[string]any{"amount_usd": json.Number(money.FormatUSD(1234)), "category": "model_usage", "balance_usd": json.Number(money.FormatUSD(5_000_000_000))}
			if ref != nil {
				spend["conversation_id"] = ref
			}
			requireSameJSON(t, spend, spendEvent(&tc.out, 5_000_000_000).Data)

			// The group commit's form, once the store has written the balance in, is the same bytes.
			whole, err := json.Marshal(spendEvent(&tc.out, 5_000_000_000).Data)
			require.NoError(t, err)
			deferred := spendAfterCharge(&tc.out).Data.(store.AfterCharge)
			require.Equal(t, string(whole), deferred.Head+money.FormatUSD(5_000_000_000)+deferred.Tail)
		})
	}
	requireSameJSON(t, map[string]any{"conversation_id": "mc-abc", "channel": "api"}, createdEvent(*conv).Data)
	require.Equal(t, []rune(long)[:199], []rune(preview(long))[:199])
	require.Len(t, []rune(preview(long)), 200, "199 characters and the ellipsis")
}

func requireSameJSON(t *testing.T, want, got any) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	require.Equal(t, string(w), string(g))
}
