package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/store"
	"switchboard/store/storetest"
)

type testBundle struct {
	pipeline  *agent.Pipeline
	store     *store.Store
	vendor    *llmtest.Fake // the beta family, over the openai protocol
	workspace store.Workspace
	ran       *[]string // arguments the weather tool was called with
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	st := storetest.New(t)
	fake := llmtest.NewOpenAI(t)
	models, err := llm.NewRegistry(map[string]llm.FamilyConfig{"beta": {Protocol: "openai", BaseURL: fake.URL, APIKey: "k"}}, false, nil)
	require.NoError(t, err)
	var ran []string
	tools, err := agent.NewTools(
		agent.Tool{Name: "weather", Description: "Weather in a city", Class: agent.Safe,
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
			Run: func(_ context.Context, c agent.Call) (any, error) {
				ran = append(ran, string(c.Arguments))
				return map[string]string{"forecast": "sunny"}, nil
			}},
		agent.Tool{Name: "delete_everything", Description: "Deletes all agents", Class: agent.Risky,
			Parameters: json.RawMessage(`{"type":"object"}`),
			Run: func(context.Context, agent.Call) (any, error) {
				t.Error("a risky tool ran without confirmation")
				return nil, nil
			}},
	)
	require.NoError(t, err)
	ws, err := st.CreateWorkspace(context.Background(), "acme", 5_000_000_000)
	require.NoError(t, err)
	return &testBundle{pipeline: agent.New(st, catalog.Default(), models, tools, slog.New(slog.NewTextHandler(io.Discard, nil))),
		store: st, vendor: fake, workspace: ws, ran: &ran}
}

func toolCall(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func TestToolLoopFeedsResultsBackAndSumsUsage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.vendor.Push(
		llmtest.Reply{ToolCalls: []llm.ToolCall{toolCall("call_1", "weather", `{"city":"Paris"}`)}, InputTokens: 100, OutputTokens: 10},
		llmtest.Reply{Text: "It is sunny in Paris.", InputTokens: 150, OutputTokens: 8},
	)
	out, err := b.pipeline.Run(context.Background(), agent.Turn{WorkspaceID: b.workspace.ID, Model: "beta-5.4", Surface: "test", Text: "weather in Paris?", Persist: true})
	require.NoError(t, err)
	require.Equal(t, "It is sunny in Paris.", out.Text)
	require.Equal(t, llm.Usage{InputTokens: 250, OutputTokens: 18}, out.Usage)
	require.Equal(t, 2, out.Steps)
	require.Equal(t, []string{`{"city":"Paris"}`}, *b.ran)

	second := b.vendor.Requests()[1].Messages
	require.Len(t, second, 3, "user, assistant tool call, tool result")
	require.Equal(t, "weather", second[1].ToolCalls[0].Name)
	require.Equal(t, "call_1", second[2].ToolResults[0].CallID)
	require.JSONEq(t, `{"forecast":"sunny"}`, second[2].ToolResults[0].Content)

	// The tool exchange is part of the stored history of the conversation.
	history, err := b.store.History(context.Background(), b.workspace.ID, out.Conversation.ID)
	require.NoError(t, err)
	require.Len(t, history, 4)
	require.Equal(t, []string{"user", "assistant", "tool", "assistant"}, []string{history[0].Role, history[1].Role, history[2].Role, history[3].Role})
}

func TestRiskyToolsAreNotRunAndEphemeralTurnsOfferSafeToolsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.vendor.Push(
		llmtest.Reply{ToolCalls: []llm.ToolCall{toolCall("c1", "delete_everything", `{}`)}},
		llmtest.Reply{Text: "I need your confirmation first."},
	)
	_, err := b.pipeline.Run(context.Background(), agent.Turn{WorkspaceID: b.workspace.ID, Model: "beta-5.4", Text: "wipe it", Persist: true})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"weather", "delete_everything"}, b.vendor.Requests()[0].Tools)
	// The OpenAI wire has no error flag on tool results: the refusal is in the content.
	result := b.vendor.Requests()[1].Messages[2].ToolResults[0]
	require.Contains(t, result.Content, "confirmation")

	_, err = b.pipeline.Run(context.Background(), agent.Turn{WorkspaceID: b.workspace.ID, Model: "beta-5.4", Text: "hi"})
	require.NoError(t, err)
	require.Equal(t, []string{"weather"}, b.vendor.Requests()[2].Tools, "ephemeral turns are offered safe tools only")
}

func TestToolLoopIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.pipeline.MaxSteps = 3
	for i := 0; i < 5; i++ {
		b.vendor.Push(llmtest.Reply{ToolCalls: []llm.ToolCall{toolCall("c", "weather", `{"city":"Rome"}`)}, Text: "checking. "})
	}
	out, err := b.pipeline.Run(context.Background(), agent.Turn{WorkspaceID: b.workspace.ID, Model: "beta-5.4", Text: "loop"})
	require.NoError(t, err)
	require.Equal(t, 3, out.Steps)
	require.Len(t, b.vendor.Requests(), 3)
	require.Empty(t, b.vendor.Requests()[2].Tools, "the last step offers no tools")
	require.Equal(t, llm.FinishStop, out.Finish)
	require.Len(t, *b.ran, 2)
}
