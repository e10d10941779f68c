package server_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
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

// TestAKnowledgeQuestionCostsOneModelCall: a deployed agent searches its knowledge base for
// the visitor's own words before it asks the model, so the model answers a question about the
// business in one call, from passages handed to it as its own call of search_knowledge_base;
// the call and its result are stored with the turn (the next turn's history holds them, the
// turns after it do not: recallSearches). With
// the tool's `prefetch: false` the model is asked first, and searches if it wants.
func TestAKnowledgeQuestionCostsOneModelCall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	yaml, err := os.ReadFile("../testdata/blueprints/valid/bakery-manual-text.yaml")
	require.NoError(t, err)
	ready := func(id string) {
		require.Eventually(t, func() bool {
			sources, err := b.store.AgentSources(context.Background(), b.workspace.ID, mustUUID(t, id))
			require.NoError(t, err)
			return len(sources) == 1 && sources[0].Status == "ready"
		}, 30*time.Second, 50*time.Millisecond)
	}
	id := b.createAgent(t, string(yaml))
	ready(id)
	vendor := b.vendors[catalog.Beta]

	vendor.Push(llmtest.Reply{Text: "On Sundays we are open from 8:00 to 12:00."})
	ans := b.chat(t, id, map[string]any{"message": "Are you open on Sundays?"})
	require.Equal(t, "On Sundays we are open from 8:00 to 12:00.", ans.Reply)
	reqs := vendor.Requests()
	require.Len(t, reqs, 1, "one model call")
	msgs := reqs[0].Messages
	require.GreaterOrEqual(t, len(msgs), 3)
	user, call, result := msgs[len(msgs)-3], msgs[len(msgs)-2], msgs[len(msgs)-1]
	require.Equal(t, llm.RoleUser, user.Role)
	require.Equal(t, "Are you open on Sundays?", user.Text)
	require.Len(t, call.ToolCalls, 1)
	require.Equal(t, "search_knowledge_base", call.ToolCalls[0].Name)
	require.JSONEq(t, `{"query":"Are you open on Sundays?"}`, string(call.ToolCalls[0].Arguments))
	require.Len(t, result.ToolResults, 1)
	require.Equal(t, call.ToolCalls[0].ID, result.ToolResults[0].CallID)
	require.Contains(t, result.ToolResults[0].Content, "8:00 to 12:00", `"Sundays" found the passage about Sunday`)
	require.Contains(t, reqs[0].System, "Each message comes with a search of the knowledge base")

	// The next turn's history holds the first turn's search, as the model saw it.
	vendor.Push(llmtest.Reply{Text: "Yes, we are closed on Mondays."})
	b.chat(t, id, map[string]any{"message": "And what about Monday?", "conversation_id": ans.ConversationID})
	reqs = vendor.Requests()
	require.Len(t, reqs, 2)
	var calls []string
	for _, m := range reqs[1].Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, string(c.Arguments))
		}
	}
	require.Equal(t, []string{`{"query":"Are you open on Sundays?"}`, `{"query":"And what about Monday?"}`}, calls)

	// A message the knowledge base has nothing for goes to the model without a search result.
	vendor.Push(llmtest.Reply{Text: "Hello!"})
	b.chat(t, id, map[string]any{"message": "Xylophone zeppelin", "conversation_id": ans.ConversationID})
	reqs = vendor.Requests()
	last := reqs[len(reqs)-1].Messages
	require.Equal(t, "Xylophone zeppelin", last[len(last)-1].Text, "no search result after the message")
	// Its history holds the previous turn's search, not the first turn's; it holds every answer.
	calls = nil
	var texts, answered []string
	for _, m := range last {
		for _, c := range m.ToolCalls {
			calls = append(calls, string(c.Arguments))
		}
		for _, r := range m.ToolResults {
			answered = append(answered, r.CallID)
		}
		texts = append(texts, m.Text)
	}
	require.Equal(t, []string{`{"query":"And what about Monday?"}`}, calls)
	require.Len(t, answered, 1, "the first turn's passages are not sent again")
	require.Contains(t, texts, "On Sundays we are open from 8:00 to 12:00.")
	require.Contains(t, texts, "Are you open on Sundays?")
	// The transcript keeps both searches.
	conv, err := b.store.ConversationByRef(context.Background(), b.workspace.ID, ans.ConversationID)
	require.NoError(t, err)
	stored, err := b.store.History(context.Background(), b.workspace.ID, conv.ID)
	require.NoError(t, err)
	searches := 0
	for _, m := range stored {
		if m.Role == "tool" {
			searches++
		}
	}
	require.Equal(t, 2, searches)

	// prefetch: false: the model decides.
	off := b.createAgent(t, strings.Replace(string(yaml), "  tools:\n    - type: search_knowledge_base",
		"  tools:\n    - type: search_knowledge_base\n      config: {prefetch: false}", 1))
	ready(off)
	vendor.Push(llmtest.Reply{Text: "Let me see."})
	b.chat(t, off, map[string]any{"message": "Are you open on Sundays?"})
	reqs = vendor.Requests()
	last = reqs[len(reqs)-1].Messages
	require.Equal(t, "Are you open on Sundays?", last[len(last)-1].Text, "no search before the model call")
	require.NotContains(t, reqs[len(reqs)-1].System, "Each message comes with a search")
}
