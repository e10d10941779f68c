package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/access"
	"switchboard/agent"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/store"
	"switchboard/store/storetest"
)

// consentBundle is a pipeline whose catalog has a read tool (viewer), a change tool (member)
// and a risky tool (admin) that counts its runs.
type consentBundle struct {
	pipeline  *agent.Pipeline
	store     *store.Store
	vendor    *llmtest.Fake
	workspace store.Workspace
	wipes     *atomic.Int32 // runs of the risky tool
}

func consentSetup(t *testing.T) *consentBundle {
	t.Helper()
	st := storetest.New(t)
	fake := llmtest.NewOpenAI(t)
	models, err := llm.NewRegistry(map[string]llm.FamilyConfig{"beta": {Protocol: "openai", BaseURL: fake.URL, APIKey: "k"}}, false, nil, 0)
	require.NoError(t, err)
	wipes := &atomic.Int32{}
	object := json.RawMessage(`{"type":"object"}`)
	tools, err := agent.NewTools(
		agent.Tool{Name: "look", Class: agent.Safe, Permission: access.Read, Parameters: object,
			Run: func(context.Context, agent.Call) (any, error) { return map[string]int{"agents": 2}, nil }},
		agent.Tool{Name: "make", Class: agent.Change, Permission: access.AgentsWrite, Parameters: object,
			Run: func(context.Context, agent.Call) (any, error) { return map[string]bool{"made": true}, nil }},
		agent.Tool{Name: "wipe", Class: agent.Risky, Permission: access.AgentsDelete, Parameters: object,
			Describe: func(_ context.Context, c agent.Call) (string, error) {
				return "Wipe the widget " + string(c.Arguments), nil
			},
			Run: func(context.Context, agent.Call) (any, error) {
				wipes.Add(1)
				return map[string]bool{"wiped": true}, nil
			}},
	)
	require.NoError(t, err)
	ws, err := st.CreateWorkspace(context.Background(), "acme", 5_000_000_000)
	require.NoError(t, err)
	p := agent.New(st, catalog.Default(), models, tools, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return &consentBundle{pipeline: p, store: st, vendor: fake, workspace: ws, wipes: wipes}
}

func (b *consentBundle) turn(t *testing.T, role access.Role, conv *store.Conversation, text string) *agent.Outcome {
	t.Helper()
	out, err := b.pipeline.Run(context.Background(), agent.Turn{WorkspaceID: b.workspace.ID, Role: role, Model: "beta-5.4",
		Text: text, Persist: true, Conversation: conv})
	require.NoError(t, err)
	return out
}

// park runs an admin turn in which the model asks for the risky tool and then answers
// without naming the code; it returns the turn's outcome.
func (b *consentBundle) park(t *testing.T, conv *store.Conversation) *agent.Outcome {
	t.Helper()
	b.vendor.Push(
		llmtest.Reply{ToolCalls: []llm.ToolCall{toolCall("c1", "wipe", `{"id":7}`)}},
		llmtest.Reply{Text: "I have prepared that for you."},
	)
	out := b.turn(t, access.Admin, conv, "wipe widget 7")
	require.Len(t, out.Parked, 1)
	return out
}

// events are the types and data of the workspace's events, oldest first.
func (b *consentBundle) events(t *testing.T) []eventRow {
	t.Helper()
	evs, err := b.store.EventsAfter(context.Background(), b.workspace.ID, 0, 1000)
	require.NoError(t, err)
	var out []eventRow
	for _, e := range evs {
		var env struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(e.Envelope), &env))
		out = append(out, eventRow{env.Type, env.Data})
	}
	return out
}

type eventRow struct {
	Type string
	Data map[string]any
}

func (b *consentBundle) ofType(t *testing.T, typ string) []map[string]any {
	var out []map[string]any
	for _, e := range b.events(t) {
		if e.Type == typ {
			out = append(out, e.Data)
		}
	}
	return out
}

var sixDigits = regexp.MustCompile(`^[0-9]{6}$`)

func TestRiskyCallIsParkedThenRunOnceByYes(t *testing.T) {
	t.Parallel()
	b := consentSetup(t)
	out := b.park(t, nil)
	a := out.Parked[0]
	require.Zero(t, b.wipes.Load(), "parked, not run")
	require.Regexp(t, sixDigits, a.Code)
	require.Equal(t, `Wipe the widget {"id":7}`, a.Summary)
	require.Contains(t, out.Text, "YES "+a.Code, "the reply names the code although the model did not")
	require.Contains(t, out.Text, a.Summary)
	// The model was told what was parked and which code confirms it.
	result := b.vendor.Requests()[1].Messages[2].ToolResults[0].Content
	require.Contains(t, result, a.Code)
	require.Contains(t, result, "awaiting_confirmation")

	requested := b.ofType(t, "confirmation.requested")
	require.Len(t, requested, 1)
	require.Equal(t, map[string]any{"action_id": a.ShortID, "action_code": a.Code, "summary": a.Summary,
		"conversation_id": out.Conversation.ShortID}, requested[0])

	calls := len(b.vendor.Requests())
	yes := b.turn(t, access.Admin, out.Conversation, "  yes "+a.Code+" ")
	require.EqualValues(t, 1, b.wipes.Load())
	require.Contains(t, yes.Text, "Done")
	require.Contains(t, yes.Text, `"wiped":true`, "the reply reports the result")
	require.Len(t, b.vendor.Requests(), calls, "the platform answers a confirmation; the model is not called")
	resolved := b.ofType(t, "confirmation.resolved")
	require.Len(t, resolved, 1)
	require.Equal(t, map[string]any{"action_id": a.ShortID, "action_code": a.Code, "resolution": "approved",
		"conversation_id": out.Conversation.ShortID}, resolved[0])

	again := b.turn(t, access.Admin, out.Conversation, "YES "+a.Code)
	require.EqualValues(t, 1, b.wipes.Load(), "a code runs once")
	require.Contains(t, again.Text, "already approved")

	// The confirmation and its reply are in the conversation's history.
	history, err := b.store.History(context.Background(), b.workspace.ID, out.Conversation.ID)
	require.NoError(t, err)
	var contents []string
	for _, m := range history {
		contents = append(contents, m.Role+": "+m.Content)
	}
	require.Contains(t, contents, "user:   yes "+a.Code+" ")
	require.Contains(t, contents, "assistant: "+yes.Text)
}

func TestAnyOtherReplyRejectsAndTheModelIsTold(t *testing.T) {
	t.Parallel()
	b := consentSetup(t)
	out := b.park(t, nil)
	code := out.Parked[0].Code
	b.vendor.Push(llmtest.Reply{Text: "Fine, I will leave it."})
	b.turn(t, access.Admin, out.Conversation, "actually, no")
	require.Zero(t, b.wipes.Load())
	resolved := b.ofType(t, "confirmation.resolved")
	require.Len(t, resolved, 1)
	require.Equal(t, "rejected", resolved[0]["resolution"])
	last := b.vendor.Requests()[len(b.vendor.Requests())-1]
	require.Contains(t, last.System, code, "the model learns the action was cancelled")

	// A YES for the rejected code afterwards runs nothing.
	late := b.turn(t, access.Admin, out.Conversation, "YES "+code)
	require.Zero(t, b.wipes.Load())
	require.Contains(t, late.Text, "already rejected")
}

// clock is a pipeline's clock, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestAnExpiredCodeNeverRuns(t *testing.T) {
	t.Parallel()
	b := consentSetup(t)
	c := &clock{now: time.Now()}
	b.pipeline.Now = c.Now
	out := b.park(t, nil)
	code := out.Parked[0].Code
	require.WithinDuration(t, c.Now().Add(agent.DefaultConfirmationTTL), out.Parked[0].ExpiresAt, time.Second)
	c.Advance(agent.DefaultConfirmationTTL) // the code is good until then, not at that instant
	late := b.turn(t, access.Admin, out.Conversation, "YES "+code)
	require.Zero(t, b.wipes.Load())
	require.Contains(t, late.Text, "expired")
	resolved := b.ofType(t, "confirmation.resolved")
	require.Len(t, resolved, 1)
	require.Equal(t, "expired", resolved[0]["resolution"])
}

func TestACodeRunsUntilItExpires(t *testing.T) {
	t.Parallel()
	b := consentSetup(t)
	c := &clock{now: time.Now()}
	b.pipeline.Now = c.Now
	b.pipeline.ConfirmationTTL = time.Hour
	out := b.park(t, nil)
	c.Advance(time.Hour - time.Second)
	done := b.turn(t, access.Admin, out.Conversation, "YES "+out.Parked[0].Code)
	require.EqualValues(t, 1, b.wipes.Load(), done.Text)
	require.Contains(t, done.Text, "Done")
}

func TestTheSweepExpiresWhatNobodyAnswered(t *testing.T) {
	t.Parallel()
	b := consentSetup(t)
	// The action was parked an hour ago: past its expiry by the database's clock, which the
	// sweep reads.
	b.pipeline.Now = func() time.Time { return time.Now().Add(-time.Hour) }
	b.park(t, nil)
	n, err := b.pipeline.ExpireActions(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	resolved := b.ofType(t, "confirmation.resolved")
	require.Len(t, resolved, 1)
	require.Equal(t, "expired", resolved[0]["resolution"])
	n, err = b.pipeline.ExpireActions(context.Background())
	require.NoError(t, err)
	require.Zero(t, n, "an action expires once")
}

func TestACodeIsValidOnlyInItsConversation(t *testing.T) {
	t.Parallel()
	b := consentSetup(t)
	out := b.park(t, nil)
	b.vendor.Push(llmtest.Reply{Text: "hello"})
	other := b.turn(t, access.Admin, nil, "start")
	b.vendor.Push(llmtest.Reply{Text: "I do not know that code."})
	b.turn(t, access.Admin, other.Conversation, "YES "+out.Parked[0].Code)
	require.Zero(t, b.wipes.Load())
	require.Empty(t, b.ofType(t, "confirmation.resolved"), "the first conversation's action is still pending")
}

func TestTheConfirmingRoleIsCheckedAgain(t *testing.T) {
	t.Parallel()
	b := consentSetup(t)
	out := b.park(t, nil)
	reply := b.turn(t, access.Member, out.Conversation, "YES "+out.Parked[0].Code)
	require.Zero(t, b.wipes.Load())
	require.Contains(t, reply.Text, "admin role")
	require.Equal(t, "rejected", b.ofType(t, "confirmation.resolved")[0]["resolution"])
}

func TestTwoConcurrentYesRunTheActionOnce(t *testing.T) {
	t.Parallel()
	b := consentSetup(t)
	out := b.park(t, nil)
	var wg sync.WaitGroup
	texts := make([]string, 2)
	for i := range texts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := b.pipeline.Run(context.Background(), agent.Turn{WorkspaceID: b.workspace.ID, Role: access.Admin,
				Model: "beta-5.4", Text: "YES " + out.Parked[0].Code, Persist: true, Conversation: out.Conversation})
			if err == nil {
				texts[i] = o.Text
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, b.wipes.Load())
	done := 0
	for _, text := range texts {
		if regexp.MustCompile(`^Done`).MatchString(text) {
			done++
		}
	}
	require.Equal(t, 1, done, "one turn ran the action, the other was told it already had: %q", texts)
	require.Len(t, b.ofType(t, "confirmation.resolved"), 1)
}

func TestToolsOfferedFollowTheRole(t *testing.T) {
	t.Parallel()
	b := consentSetup(t)
	offered := func(role access.Role, persist bool) []string {
		b.vendor.Push(llmtest.Reply{Text: "ok"})
		_, err := b.pipeline.Run(context.Background(), agent.Turn{WorkspaceID: b.workspace.ID, Role: role, Model: "beta-5.4", Text: "hi", Persist: persist})
		require.NoError(t, err)
		reqs := b.vendor.Requests()
		return reqs[len(reqs)-1].Tools
	}
	require.Equal(t, []string{"look"}, offered(access.Viewer, true))
	require.Equal(t, []string{"look", "make"}, offered(access.Member, true))
	require.Equal(t, []string{"look", "make", "wipe"}, offered(access.Admin, true))
	require.Equal(t, []string{"look"}, offered(access.Owner, false), "ephemeral turns: read-only tools only")
	require.Empty(t, offered(access.None, true), "no role, no tool that needs one")

	// A tool the role was not offered is refused if the model names it anyway.
	b.vendor.Push(llmtest.Reply{ToolCalls: []llm.ToolCall{toolCall("c", "wipe", `{}`)}}, llmtest.Reply{Text: "no"})
	_, err := b.pipeline.Run(context.Background(), agent.Turn{WorkspaceID: b.workspace.ID, Role: access.Viewer, Model: "beta-5.4", Text: "wipe", Persist: true})
	require.NoError(t, err)
	reqs := b.vendor.Requests()
	require.Contains(t, reqs[len(reqs)-1].Messages[2].ToolResults[0].Content, "admin role")
	require.Empty(t, b.ofType(t, "confirmation.requested"))
}
