package converse_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/converse"
	"switchboard/store"
)

// TestAChangedAgentIsNeverAnsweredFromAKeptCopy: a turn continuing a conversation uses the
// agent as the runtime kept it from an earlier turn only while the agent's row is unchanged.
// The changes here are written straight to the database, as another replica would write
// them (no announcement reaches this runtime): the next turn sees each of them.
func TestAChangedAgentIsNeverAnsweredFromAKeptCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, rulesAgentYAML)
	vendor := w.vendors[catalog.Gamma]

	conv := w.chat(t, id, "", "Hello").ConversationID
	require.Equal(t, converse.BlockedTopicReply, w.chat(t, id, conv, "and politics?").Reply, "the kept copy, unchanged")

	a, err := w.store.AgentByID(ctx, w.workspace.ID, id)
	require.NoError(t, err)
	update := func(status string, blueprint []byte) {
		_, err := w.store.UpdateAgent(ctx, w.workspace.ID, id, store.AgentUpdate{Name: a.Name, Status: status, Blueprint: blueprint,
			DisclosureEnabled: a.DisclosureEnabled, DisclosureText: a.DisclosureText, DisclosureRecordingID: a.DisclosureRecordingID})
		require.NoError(t, err)
	}

	update("disabled", a.Blueprint)
	_, err = w.svc.Chat(ctx, converse.Request{WorkspaceID: w.workspace.ID, AgentID: id, ConversationID: conv, Message: "still there?"})
	e := apierr.As(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, "agent_disabled", e.Code)

	// Enabled again, politics no longer blocked: the model answers it.
	var bp map[string]any
	require.NoError(t, json.Unmarshal(a.Blueprint, &bp))
	bp["agent"].(map[string]any)["business_rules"].(map[string]any)["blocked_topics"] = []string{"weather"}
	changed, err := json.Marshal(bp)
	require.NoError(t, err)
	update("enabled", changed)
	before := len(vendor.Requests())
	require.Equal(t, "reply to: and politics?", w.chat(t, id, conv, "and politics?").Reply)
	require.Len(t, vendor.Requests(), before+1)
	require.Equal(t, converse.BlockedTopicReply, w.chat(t, id, conv, "the weather?").Reply, "the new copy is kept")

	// Deleted: the agent is not found, as a read of its row says.
	require.NoError(t, w.store.DeleteAgent(ctx, w.workspace.ID, id))
	_, err = w.svc.Chat(ctx, converse.Request{WorkspaceID: w.workspace.ID, AgentID: id, ConversationID: conv, Message: "hello?"})
	e = apierr.As(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, "id", e.Param)
}
