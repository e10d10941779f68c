package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/apierr"
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
	models, err := llm.NewRegistry(map[string]llm.FamilyConfig{"beta": {Protocol: "openai", BaseURL: fake.URL, APIKey: "k"}}, false, nil, 0)
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
	p := agent.New(st, catalog.Default(), models, tools, slog.New(slog.NewTextHandler(io.Discard, nil)))
	// As in production (app.DefaultConfig): turns commit through the group committer.
	g := agent.NewGroupCommit(p, 2*time.Millisecond)
	t.Cleanup(func() { require.NoError(t, g.Close(context.Background())) })
	return &testBundle{pipeline: p, store: st, vendor: fake, workspace: ws, ran: &ran}
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

// ledger is the workspace's ledger rows, oldest first, and its balance now.
func (b *testBundle) ledger(t *testing.T) (rows []ledgerRow, balance int64) {
	t.Helper()
	ctx := context.Background()
	r, err := b.store.Pool().Query(ctx, `SELECT amount_nano_usd, input_tokens, output_tokens, conversation_id IS NOT NULL FROM ledger WHERE workspace_id = $1 ORDER BY created_at`, b.workspace.ID)
	require.NoError(t, err)
	for r.Next() {
		var row ledgerRow
		require.NoError(t, r.Scan(&row.amount, &row.in, &row.out, &row.linked))
		rows = append(rows, row)
	}
	require.NoError(t, r.Err())
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT balance_nano_usd FROM workspaces WHERE id = $1`, b.workspace.ID).Scan(&balance))
	return rows, balance
}

type ledgerRow struct {
	amount, in, out int64
	linked          bool
}

// A turn whose vendor call completed is charged even when the commit that follows fails:
// the charge is written in a transaction of its own, and nothing else of the turn is.
func TestFailedCommitIsStillMetered(t *testing.T) {
	t.Parallel()
	t.Run("the surface's record fails", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.vendor.Push(llmtest.Reply{Text: "Hello.", InputTokens: 1000, OutputTokens: 500})
		_, err := b.pipeline.Run(context.Background(), agent.Turn{WorkspaceID: b.workspace.ID, Model: "beta-5.4", Surface: "test", Text: "hi", Persist: true,
			Record: func(*agent.Outcome) (store.TurnRecord, error) { return store.TurnRecord{}, errors.New("record failed") }})
		require.Error(t, err)
		require.Len(t, b.vendor.Requests(), 1)
		rows, balance := b.ledger(t)
		require.Len(t, rows, 1, "the vendor answered: the turn is charged")
		require.Equal(t, int64(1000), rows[0].in)
		require.Equal(t, int64(500), rows[0].out)
		require.Negative(t, rows[0].amount)
		require.False(t, rows[0].linked, "the conversation the turn opened was rolled back")
		require.Equal(t, b.workspace.BalanceNanoUSD+rows[0].amount, balance)
		var conversations int
		require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM conversations`).Scan(&conversations))
		require.Zero(t, conversations)
	})
	t.Run("the conversation is deleted while the model answers", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := context.Background()
		first, err := b.pipeline.Run(ctx, agent.Turn{WorkspaceID: b.workspace.ID, Model: "beta-5.4", Surface: "test", Text: "hi", Persist: true})
		require.NoError(t, err)
		_, before := b.ledger(t)
		b.vendor.Push(llmtest.Reply{Text: "Still here.", InputTokens: 2000, OutputTokens: 100})
		deleted := false
		_, err = b.pipeline.Run(ctx, agent.Turn{WorkspaceID: b.workspace.ID, Model: "beta-5.4", Surface: "test", Text: "again", Persist: true,
			Conversation: first.Conversation,
			OnDelta: func(string) error {
				if !deleted {
					_, err := b.store.Pool().Exec(ctx, `DELETE FROM conversations WHERE id = $1`, first.Conversation.ID)
					require.NoError(t, err)
					deleted = true
				}
				return nil
			}})
		require.Error(t, err)
		rows, balance := b.ledger(t)
		require.Len(t, rows, 2)
		require.Equal(t, int64(2000), rows[1].in)
		require.Equal(t, before+rows[1].amount, balance)
	})
}

// Input PostgreSQL would refuse never reaches the vendor: the turn is refused before the
// model call, so there is nothing to charge and nothing to lose.
func TestNULInputIsRefusedBeforeTheModelCall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, turn := range []agent.Turn{
		{Text: "hi\x00"},
		{Text: "hi", Instructions: []string{"be \x00 brief"}},
		{Text: "hi", Seed: []llm.Message{{Role: llm.RoleUser, Text: "\x00"}}},
	} {
		turn.WorkspaceID, turn.Model, turn.Persist = b.workspace.ID, "beta-5.4", true
		_, err := b.pipeline.Run(context.Background(), turn)
		e := apierr.As(err)
		require.NotNil(t, e)
		require.Equal(t, "nul_character", e.Code)
		require.Equal(t, "input", e.Param)
	}
	require.Empty(t, b.vendor.Requests())
}

// A vendor's reply holding NUL characters is kept with U+FFFD in their place: the commit
// must not fail on what the model said.
func TestNULInTheReplyIsReplaced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.vendor.Push(
		llmtest.Reply{ToolCalls: []llm.ToolCall{toolCall("call_\x00", "weather", `{"city":"Par\u0000is"}`)}},
		llmtest.Reply{Text: "Sun\x00ny."},
	)
	out, err := b.pipeline.Run(context.Background(), agent.Turn{WorkspaceID: b.workspace.ID, Model: "beta-5.4", Surface: "test", Text: "weather?", Persist: true})
	require.NoError(t, err)
	require.Equal(t, "Sun\uFFFDny.", out.Text)
	history, err := b.store.History(context.Background(), b.workspace.ID, out.Conversation.ID)
	require.NoError(t, err)
	require.Len(t, history, 4)
	require.Equal(t, "Sun\uFFFDny.", history[3].Content)
}

// TestAHistoryReadBeforeTheTurnIsUsedWhenItsWindowIsTheTurns: Turn.History stands for the
// stored window when it was read with at most the turn's own HistoryWindow (a caller may
// keep room for a Prelude it had yet to make); read with a larger window (another prompt,
// another model), the turn reads the store again. A Prelude follows the turn's text, is sent
// and is stored with what the model produced.
func TestAHistoryReadBeforeTheTurnIsUsedWhenItsWindowIsTheTurns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	conv, err := b.store.CreateConversation(ctx, b.workspace.ID, "api")
	require.NoError(t, err)
	require.NoError(t, b.store.AppendMessages(ctx, b.workspace.ID, conv.ID, []store.Message{{Role: "assistant", Content: "stored"}}))
	model, ok := catalog.Default().Lookup("beta-5.4")
	require.True(t, ok)
	turn := agent.Turn{WorkspaceID: b.workspace.ID, Model: "beta-5.4", Surface: "test", Text: "hi", Persist: true, Conversation: &conv, System: "be brief"}
	read := []llm.Message{{Role: llm.RoleAssistant, Text: "read before"}}

	b.vendor.Push(llmtest.Reply{Text: "one"}, llmtest.Reply{Text: "two"}, llmtest.Reply{Text: "three"})
	turn.History = &agent.History{MaxBytes: agent.HistoryWindow(model, turn), Messages: read}
	_, err = b.pipeline.Run(ctx, turn)
	require.NoError(t, err)
	turn.History = &agent.History{MaxBytes: agent.HistoryWindow(model, turn) + 1, Messages: read}
	_, err = b.pipeline.Run(ctx, turn)
	require.NoError(t, err)

	// Read with room kept for the prelude, which the turn's window then takes.
	prelude := []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "p1", Name: "lookup", Arguments: json.RawMessage(`{"q":"hi"}`)}}},
		{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "p1", Name: "lookup", Content: `{"found":"a passage"}`}}},
	}
	turn.History = &agent.History{MaxBytes: agent.HistoryWindow(model, turn) - 1000, Messages: read}
	turn.Prelude = prelude
	require.Equal(t, agent.HistoryWindow(model, agent.Turn{System: "be brief", Text: "hi"})-agent.PreludeBytes(prelude), agent.HistoryWindow(model, turn))
	_, err = b.pipeline.Run(ctx, turn)
	require.NoError(t, err)

	reqs := b.vendor.Requests()
	require.Len(t, reqs, 3)
	require.Equal(t, "read before", reqs[0].Messages[0].Text, "the window given")
	require.Equal(t, "stored", reqs[1].Messages[0].Text, "a larger window: read again")
	require.Equal(t, "read before", reqs[2].Messages[0].Text, "a smaller window is used")
	sent := reqs[2].Messages
	require.Equal(t, "hi", sent[len(sent)-3].Text)
	require.Equal(t, "p1", sent[len(sent)-2].ToolCalls[0].ID)
	require.Equal(t, `{"found":"a passage"}`, sent[len(sent)-1].ToolResults[0].Content)

	stored, err := b.store.HistoryWindow(ctx, b.workspace.ID, conv.ID, 100, 1<<20)
	require.NoError(t, err)
	var roles []string
	for _, m := range stored[len(stored)-4:] {
		roles = append(roles, m.Role+":"+m.Content)
	}
	require.Equal(t, []string{"user:hi", "assistant:", "tool:", "assistant:three"}, roles, "the prelude is stored between the text and the reply")
}
