package converse_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/catalog"
	"switchboard/converse"
	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/manage"
	"switchboard/netguard"
	"switchboard/store"
	"switchboard/store/storetest"
)

// world is the runtime of deployed agents over its own database, the three vendor families
// faked at the wire behind the real adapters, and a clock the test moves by hand. Its job
// client only inserts: the tests read the queued notification emails (notifications) and
// work one through the real mailer where the mail itself matters.
type world struct {
	svc       *converse.Service
	store     *store.Store
	ops       *manage.Service
	vendors   map[catalog.Family]*llmtest.Fake
	workspace store.Workspace
	clock     *clock
}

// clock is the agents' clock, pinned by the test and moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to an RFC 3339 instant.
func (c *clock) Set(t *testing.T, rfc3339 string) {
	t.Helper()
	at, err := time.Parse(time.RFC3339, rfc3339)
	require.NoError(t, err)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = at
}

// newWorld starts the runtime with its clock at the given instant.
func newWorld(t *testing.T, rfc3339 string) *world {
	t.Helper()
	st := storetest.New(t)
	vendors := map[catalog.Family]*llmtest.Fake{
		catalog.Alpha: llmtest.NewAnthropic(t),
		catalog.Beta:  llmtest.NewOpenAI(t),
		catalog.Gamma: llmtest.NewGemini(t),
	}
	families := map[string]llm.FamilyConfig{}
	for f, fake := range vendors {
		families[string(f)] = llm.FamilyConfig{Protocol: fake.Protocol(), BaseURL: fake.URL, APIKey: "test-key-" + string(f)}
	}
	models, err := llm.NewRegistry(families, false, nil, 0)
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	jobs, err := river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{Logger: log})
	require.NoError(t, err)
	ws, err := st.CreateWorkspace(context.Background(), "acme", 5_000_000_000)
	require.NoError(t, err)
	c := &clock{}
	c.Set(t, rfc3339)
	guard := netguard.Guard{AllowPrivate: true}
	pipeline := agent.New(st, catalog.Default(), models, nil, log)
	return &world{
		svc:   converse.New(st, catalog.Default(), pipeline, guard, jobs, c.Now, log),
		store: st, ops: manage.New(st, catalog.Default(), guard, jobs, "http://switchboard.test"),
		vendors: vendors, workspace: ws, clock: c,
	}
}

// agent creates an agent from a blueprint.
func (w *world) agent(t *testing.T, yaml string) uuid.UUID {
	t.Helper()
	created, err := w.ops.CreateAgent(context.Background(), w.workspace.ID, manage.CreateAgentInput{YAML: yaml})
	require.NoError(t, err)
	id, err := uuid.Parse(created.AgentID)
	require.NoError(t, err)
	return id
}

// chat sends one message to an agent; conv continues a conversation ("" opens one).
func (w *world) chat(t *testing.T, agentID uuid.UUID, conv, message string) *converse.Answer {
	t.Helper()
	return w.chatAs(t, agentID, conv, message, nil)
}

func (w *world) chatAs(t *testing.T, agentID uuid.UUID, conv, message string, contact *converse.Contact) *converse.Answer {
	t.Helper()
	ans, err := w.svc.Chat(context.Background(), converse.Request{WorkspaceID: w.workspace.ID, AgentID: agentID,
		ConversationID: conv, Message: message, Contact: contact})
	require.NoError(t, err, message)
	return ans
}

// conversation is a conversation's stored state: status, escalation, contact.
func (w *world) conversation(t *testing.T, ref string) store.AgentConversation {
	t.Helper()
	ctx := context.Background()
	c, err := w.store.ConversationByRef(ctx, w.workspace.ID, ref)
	require.NoError(t, err)
	state, err := w.store.AgentConversationState(ctx, w.workspace.ID, c.ID)
	require.NoError(t, err)
	return state
}

type event struct {
	Type string
	Data map[string]any
}

// events lists the workspace's events of one type, oldest first.
func (w *world) events(t *testing.T, typ string) []event {
	t.Helper()
	var out []event
	for _, e := range w.allEvents(t) {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// allEvents lists the workspace's events, oldest first.
func (w *world) allEvents(t *testing.T) []event {
	t.Helper()
	evs, err := w.store.EventsAfter(context.Background(), w.workspace.ID, 0, 1000)
	require.NoError(t, err)
	out := make([]event, len(evs))
	for i, e := range evs {
		var env struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal(e.Envelope, &env))
		out[i] = event{env.Type, env.Data}
	}
	return out
}

// notifications are the queued notification emails, oldest first.
func (w *world) notifications(t *testing.T) []converse.NotifyArgs {
	t.Helper()
	rows, err := w.store.Pool().Query(context.Background(),
		`SELECT args FROM river_job WHERE kind = $1 ORDER BY id`, converse.NotifyArgs{}.Kind())
	require.NoError(t, err)
	defer rows.Close()
	var out []converse.NotifyArgs
	for rows.Next() {
		var raw []byte
		require.NoError(t, rows.Scan(&raw))
		var a converse.NotifyArgs
		require.NoError(t, json.Unmarshal(raw, &a))
		out = append(out, a)
	}
	require.NoError(t, rows.Err())
	return out
}

// rulesAnswered says the reply came from the rules: no model was called, nothing was used.
func rulesAnswered(t *testing.T, ans *converse.Answer) {
	t.Helper()
	require.Zero(t, ans.Usage.TotalTokens, ans.Reply)
}
