package server_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/llm/llmtest"
)

// TestManualTextAnswersThroughKnowledgeSearch: the bakery blueprint of testdata/blueprints/valid
// has a manual_text source; once it is ingested, its deployed agent's model asks
// search_knowledge_base and receives the passage of that text that answers the question.
func TestManualTextAnswersThroughKnowledgeSearch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	yaml, err := os.ReadFile("../testdata/blueprints/valid/bakery-manual-text.yaml")
	require.NoError(t, err)
	id := b.createAgent(t, string(yaml))
	require.Eventually(t, func() bool {
		sources, err := b.store.AgentSources(context.Background(), b.workspace.ID, mustUUID(t, id))
		require.NoError(t, err)
		return len(sources) == 1 && sources[0].Status == "ready"
	}, 30*time.Second, 20*time.Millisecond, "the manual_text source is ingested")

	vendor := b.vendors[catalog.Beta]
	vendor.Push(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "k1", Name: "search_knowledge_base", Arguments: json.RawMessage(`{"query":"opening hours Sunday"}`)}}},
		llmtest.Reply{Text: "On Sunday we are open from 8:00 to 12:00."},
	)
	ans := b.chat(t, id, map[string]any{"message": "When are you open on Sunday?"})
	require.Equal(t, "On Sunday we are open from 8:00 to 12:00.", ans.Reply)
	reqs := vendor.Requests()
	require.Len(t, reqs, 2)
	msgs := reqs[1].Messages
	found := msgs[len(msgs)-1].ToolResults[0].Content
	require.Contains(t, found, "on Sunday", "the search returned the passage of the manual text")
	require.Contains(t, found, "8:00 to 12:00")
}
