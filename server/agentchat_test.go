package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/mailer/mailtest"
	"switchboard/store"
	"switchboard/webchat"
)

// testClock is the deployed agents' clock, pinned by the test and moved by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t *testing.T, rfc3339 string) *testClock {
	t.Helper()
	at, err := time.Parse(time.RFC3339, rfc3339)
	require.NoError(t, err)
	return &testClock{t: at}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type chatAnswer struct {
	ConversationID string   `json:"conversation_id"`
	Reply          string   `json:"reply"`
	Labels         []string `json:"labels"`
	Escalation     *struct {
		Trigger string `json:"trigger"`
		Action  string `json:"action"`
	} `json:"escalation"`
	Status string `json:"status"`
	Usage  struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
		TotalTokens  int64 `json:"total_tokens"`
	} `json:"usage"`
}

// createAgent creates an agent from a blueprint and returns its id.
func (b *testBundle) createAgent(t *testing.T, yaml string) string {
	t.Helper()
	resp, raw := b.postYAML(t, "/api/agents", yaml)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var created struct {
		AgentID string `json:"agentId"`
	}
	require.NoError(t, json.Unmarshal(raw, &created))
	return created.AgentID
}

// chat sends a message to an agent and expects a JSON answer.
func (b *testBundle) chat(t *testing.T, agentID string, body map[string]any) chatAnswer {
	t.Helper()
	resp, raw := b.chatRaw(t, agentID, body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var out chatAnswer
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return out
}

func (b *testBundle) chatRaw(t *testing.T, agentID string, body map[string]any) (*http.Response, []byte) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	return b.do(t, http.MethodPost, "/api/agents/"+agentID+"/chat", "Bearer "+b.key, string(raw))
}

type chatFrame struct{ event, data string }

// chatStream sends a message asking for a stream and returns its frames.
func (b *testBundle) chatStream(t *testing.T, agentID string, body map[string]any, accept bool) []chatFrame {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, b.url+"/api/agents/"+agentID+"/chat", strings.NewReader(string(raw)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.key)
	req.Header.Set("Content-Type", "application/json")
	if accept {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var frames []chatFrame
	sc := bufio.NewScanner(resp.Body)
	var cur chatFrame
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case line == "" && cur.event != "":
			frames = append(frames, cur)
			cur = chatFrame{}
		}
	}
	require.NoError(t, sc.Err())
	return frames
}

type storedEvent struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

// events lists the workspace's events of one type, in order.
func (b *testBundle) events(t *testing.T, typ string) []storedEvent {
	t.Helper()
	rows, err := b.store.Pool().Query(context.Background(),
		"SELECT envelope FROM events WHERE workspace_id = $1 AND type = $2 ORDER BY seq", b.workspace.ID, typ)
	require.NoError(t, err)
	defer rows.Close()
	var out []storedEvent
	for rows.Next() {
		var env string
		require.NoError(t, rows.Scan(&env))
		var e storedEvent
		require.NoError(t, json.Unmarshal([]byte(env), &e))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}

// waitMail waits for the sink to hold n messages.
func waitMail(t *testing.T, sink *mailtest.Sink, n int) []mailtest.Mail {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if got := sink.Messages(); len(got) >= n {
			return got
		}
		select {
		case <-sink.Received():
		case <-deadline:
			t.Fatalf("the SMTP sink got %d message(s), want %d", len(sink.Messages()), n)
		}
	}
}

const chatAgentYAML = `agent:
  name: Chat Tester
  language: fr
  persona:
    display_name: Camille
    tone: casual
    greeting: Salut ! Je suis Camille. Comment puis-je t'aider ?
  llm:
    provider: beta
    model: beta-5.4-mini
    temperature: 1.3
    max_tokens: 300
    system_prompt: Tu réponds aux questions des clients de la boulangerie Dupain.
  channels:
    - type: telco_voice
`

func TestAgentChatPersonaModelGreetingAndRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.createAgent(t, chatAgentYAML)
	vendor := b.vendors[catalog.Beta]
	vendor.Push(llmtest.Reply{Text: "On ouvre à 7h."})
	before := b.balance(t)

	first := b.chat(t, id, map[string]any{"message": "Vous ouvrez à quelle heure ?", "contact": map[string]any{"name": "Ada"}})
	require.Equal(t, "On ouvre à 7h.", first.Reply)
	require.True(t, strings.HasPrefix(first.ConversationID, "mc-"), first.ConversationID)
	require.Equal(t, "open", first.Status)
	require.Nil(t, first.Escalation)
	require.Equal(t, []string{}, first.Labels)
	require.Equal(t, int64(llmtest.DefaultInputTokens), first.Usage.InputTokens)
	require.Equal(t, int64(llmtest.DefaultInputTokens+llmtest.DefaultOutputTokens), first.Usage.TotalTokens)

	// The agent's model, temperature, max_tokens, system prompt and persona reach the vendor;
	// the greeting and the disclosure (a voice agent) come before the user's message.
	reqs := vendor.Requests()
	require.Len(t, reqs, 1)
	got := reqs[0]
	require.Equal(t, "beta-5.4-mini", got.Model)
	require.NotNil(t, got.Temperature)
	require.InDelta(t, 1.3, *got.Temperature, 1e-9)
	require.Equal(t, 300, got.MaxTokens)
	require.Contains(t, got.System, "Tu réponds aux questions des clients de la boulangerie Dupain.")
	require.Contains(t, got.System, "Camille")
	require.Contains(t, got.System, "casual")
	require.Contains(t, got.System, "French")
	require.NotContains(t, got.System, "builder assistant")
	require.Empty(t, got.Tools, "no tools enabled, none offered")
	require.Len(t, got.Messages, 3)
	require.Equal(t, llm.Message{Role: llm.RoleAssistant, Text: "Salut ! Je suis Camille. Comment puis-je t'aider ?"}, got.Messages[0])
	require.Equal(t, llm.RoleAssistant, got.Messages[1].Role)
	require.Contains(t, got.Messages[1].Text, "assistant IA automatisé", "the default disclosure in the agent's language")
	require.Equal(t, llm.Message{Role: llm.RoleUser, Text: "Vous ouvrez à quelle heure ?"}, got.Messages[2])

	// The conversation goes on, with its history.
	second := b.chat(t, id, map[string]any{"message": "Et le dimanche ?", "conversation_id": first.ConversationID})
	require.Equal(t, first.ConversationID, second.ConversationID)
	require.Equal(t, "reply to: Et le dimanche ?", second.Reply)
	require.Len(t, vendor.Requests()[1].Messages, 5)

	// Records: metering at the agent's model price, events with the conversation.
	m, _ := catalog.Default().Lookup("beta-5.4-mini")
	require.Equal(t, before-2*m.CostNanoUSD(llmtest.DefaultInputTokens, llmtest.DefaultOutputTokens), b.balance(t))
	created := b.events(t, "conversation.created")
	require.Len(t, created, 1)
	require.Equal(t, first.ConversationID, created[0].Data["conversation_id"])
	require.Equal(t, "api", created[0].Data["channel"])
	require.NotEmpty(t, created[0].Data["contact_id"])
	completed := b.events(t, "turn.completed")
	require.Len(t, completed, 2)
	require.Equal(t, "agent", completed[0].Data["surface"])
	require.Equal(t, id, completed[0].Data["agent_id"])
	require.Equal(t, "beta-5.4-mini", completed[0].Data["model"])
	spend := b.events(t, "spend.recorded")
	require.Len(t, spend, 2)
	require.Equal(t, first.ConversationID, spend[0].Data["conversation_id"])

	// get_conversations and get_analytics report the conversation; its detail starts with
	// the greeting and records the disclosure and the contact.
	s := b.mcp(t, b.url, b.key)
	list := s.ok("get_conversations", map[string]any{"agent_id": id})
	require.EqualValues(t, 1, list["total"])
	detail := s.ok("get_conversations", map[string]any{"agent_id": id, "conversation_id": first.ConversationID})
	conv := detail["conversations"].([]any)[0].(map[string]any)
	msgs := conv["messages"].([]any)
	require.Len(t, msgs, 6)
	require.Equal(t, "Salut ! Je suis Camille. Comment puis-je t'aider ?", msgs[0].(map[string]any)["content"])
	require.Equal(t, "assistant", msgs[0].(map[string]any)["role"])
	require.NotEmpty(t, conv["disclosedAt"])
	require.Equal(t, "Ada", conv["contact"].(map[string]any)["name"])
	stats := s.ok("get_analytics", map[string]any{"agent_id": id})
	require.EqualValues(t, 1, stats["totalConversations"])
}

func TestAgentChatStreams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.createAgent(t, chatAgentYAML)
	b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "Bonjour, ça va ?", Chunks: 3}, llmtest.Reply{Text: "Oui."})
	for _, accept := range []bool{false, true} {
		body := map[string]any{"message": "Salut"}
		if !accept {
			body["stream"] = true
		}
		frames := b.chatStream(t, id, body, accept)
		require.GreaterOrEqual(t, len(frames), 3)
		require.Equal(t, "conversation", frames[0].event)
		last := frames[len(frames)-1]
		require.Equal(t, "done", last.event)
		var done chatAnswer
		require.NoError(t, json.Unmarshal([]byte(last.data), &done))
		var text strings.Builder
		for _, f := range frames[1 : len(frames)-1] {
			require.Equal(t, "delta", f.event)
			var d struct{ Text string }
			require.NoError(t, json.Unmarshal([]byte(f.data), &d))
			text.WriteString(d.Text)
		}
		require.Equal(t, done.Reply, text.String())
		require.Contains(t, frames[0].data, done.ConversationID)
	}
	// A failure once the stream began ends it with an error frame.
	b.vendors[catalog.Beta].Push(llmtest.Reply{Status: http.StatusInternalServerError}, llmtest.Reply{Status: http.StatusInternalServerError},
		llmtest.Reply{Status: http.StatusInternalServerError})
	frames := b.chatStream(t, id, map[string]any{"message": "Salut", "stream": true}, false)
	require.Equal(t, "conversation", frames[0].event)
	require.Equal(t, "error", frames[len(frames)-1].event)
}

func TestAgentChatRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.createAgent(t, chatAgentYAML)
	other := b.createAgent(t, strings.Replace(chatAgentYAML, "Chat Tester", "Other", 1))
	vendor := b.vendors[catalog.Beta]
	conv := b.chat(t, other, map[string]any{"message": "Bonjour"})

	resp, raw := b.chatRaw(t, id, map[string]any{"message": "Bonjour", "conversation_id": conv.ConversationID})
	e := errorOf(t, resp, raw, http.StatusNotFound)
	require.Equal(t, "conversation_not_found", str(e.Code))
	require.Equal(t, "conversation_id", str(e.Param))
	resp, raw = b.chatRaw(t, uuid.NewString(), map[string]any{"message": "Bonjour"})
	require.Equal(t, "agent_not_found", str(errorOf(t, resp, raw, http.StatusNotFound).Code))
	resp, raw = b.chatRaw(t, id, map[string]any{"message": ""})
	require.Equal(t, "message", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))
	resp, raw = b.chatRaw(t, id, map[string]any{"message": strings.Repeat("x", 4001)})
	require.Equal(t, "message", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))
	resp, raw = b.chatRaw(t, id, map[string]any{"message": "Bonjour", "contact": map[string]any{"email": "not-an-email"}})
	require.Equal(t, "contact.email", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))

	// A disabled agent answers 409 and never reaches the model.
	calls := len(vendor.Requests())
	resp, raw = b.do(t, http.MethodPatch, "/api/agents/"+id, "Bearer "+b.key, `{"status":"disabled"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	resp, raw = b.chatRaw(t, id, map[string]any{"message": "Bonjour"})
	require.Equal(t, "agent_disabled", str(errorOf(t, resp, raw, http.StatusConflict).Code))
	require.Len(t, vendor.Requests(), calls)
}

const rulesAgentYAML = `agent:
  name: Rules
  language: en
  persona:
    display_name: Rita
    tone: friendly
    greeting: Hi, I'm Rita.
  llm:
    provider: gamma
    model: gamma-v4-flash
    temperature: 0.4
    max_tokens: 256
    system_prompt: You help customers of an online shop.
  business_rules:
    blocked_topics: [politics, competitor pricing]
    escalation:
      enabled: true
      trigger: user_request
      action: transfer_to_human
      notification_email: team@example.com
      pickup_timeout_minutes: 10
`

// TestAgentChatEscalationOverHTTP: the business rules themselves are package converse's
// tests; here, what only the assembled process shows: the escalation's JSON shape, the
// notification mailed by the job queue over SMTP_URL, the deployed agents' clock (the pickup
// timeout), and the conversation's state through get_conversations.
func TestAgentChatEscalationOverHTTP(t *testing.T) {
	t.Parallel()
	sink := mailtest.New(t)
	clock := newClock(t, "2026-11-23T10:00:00Z")
	b := setup(t, func(o *setupOpts) { o.clock, o.smtpURL = clock.Now, sink.URL() })
	id := b.createAgent(t, rulesAgentYAML)

	blocked := b.chat(t, id, map[string]any{"message": "What about politics?"})
	require.Equal(t, "open", blocked.Status)
	require.Nil(t, blocked.Escalation)
	require.Zero(t, blocked.Usage.TotalTokens, "a rule answered")
	esc := b.chat(t, id, map[string]any{"message": "Can I talk to a real person please?", "conversation_id": blocked.ConversationID})
	require.Equal(t, "escalated", esc.Status)
	require.NotNil(t, esc.Escalation)
	require.Equal(t, "user_request", esc.Escalation.Trigger)
	require.Equal(t, "transfer_to_human", esc.Escalation.Action)
	require.Equal(t, []string{}, esc.Labels)
	require.Empty(t, b.vendors[catalog.Gamma].Requests())

	mail := waitMail(t, sink, 1)[0]
	require.Equal(t, []string{"team@example.com"}, mail.To)
	require.Contains(t, mail.Subject, "user_request")
	require.Contains(t, mail.Body, "Can I talk to a real person please?")

	clock.Advance(10 * time.Minute)
	timeout := b.chat(t, id, map[string]any{"message": "Anyone there?", "conversation_id": blocked.ConversationID})
	require.Contains(t, timeout.Reply, "nobody from our team is free")
	s := b.mcp(t, b.url, b.key)
	detail := s.ok("get_conversations", map[string]any{"agent_id": id, "conversation_id": blocked.ConversationID})
	conv := detail["conversations"].([]any)[0].(map[string]any)
	require.Equal(t, "escalated", conv["status"])
	require.NotNil(t, conv["escalation"].(map[string]any)["pickupTimedOutAt"])
}

const toolsAgentYAML = `agent:
  name: Tools
  language: en
  persona:
    display_name: Tia
    tone: friendly
    greeting: Hi, I'm Tia.
  llm:
    provider: beta
    model: beta-5.4-mini
    temperature: 0.2
    max_tokens: 400
    system_prompt: You answer questions about the Acme store.
  labels: [billing, shipping]
  tools:
    - type: search_knowledge_base
    - type: apply_label
    - type: http_webhook
      config: {url: "RECEIVER/hook", headers: {X-Token: secret-1}}
    - type: http_request
      config: {url: "RECEIVER/orders", method: GET, headers: {Authorization: Bearer abc}}
    - type: http_request
      enabled: false
      config: {url: "RECEIVER/never"}
`

type toolReceiver struct {
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func newToolReceiver(t *testing.T, tls bool) (*toolReceiver, *httptest.Server) {
	r := &toolReceiver{}
	start := httptest.NewServer
	if tls {
		start = httptest.NewTLSServer
	}
	srv := start(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, req)
		r.body = append(r.body, string(raw))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(req.URL.Path, "/orders") {
			_, _ = io.WriteString(w, `{"order":"A-17","state":"shipped"}`+strings.Repeat(" ", 20<<10))
			return
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return r, srv
}

func TestAgentChatTools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recv, srv := newToolReceiver(t, false)
	id := b.createAgent(t, strings.ReplaceAll(toolsAgentYAML, "RECEIVER", srv.URL))
	agentID := mustUUID(t, id)
	ctx := context.Background()
	kb, err := b.store.KnowledgeBaseOf(ctx, b.workspace.ID, agentID)
	require.NoError(t, err)
	src, err := b.store.AddSource(ctx, b.workspace.ID, kb, store.NewSource{Type: "website_crawl", URL: "https://acme.test/", Depth: 1, Status: "ready"})
	require.NoError(t, err)
	require.NoError(t, b.store.AddChunks(ctx, b.workspace.ID, src.ID, []store.Chunk{
		{URL: "https://acme.test/shipping", Title: "Shipping", Content: "Parcels leave our warehouse within two working days."},
		{URL: "https://acme.test/returns", Title: "Returns", Content: "Returns are free for thirty days."},
	}))

	vendor := b.vendors[catalog.Beta]
	call := func(id, name, args string) llm.ToolCall {
		return llm.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	vendor.Push(
		llmtest.Reply{ToolCalls: []llm.ToolCall{call("c1", "search_knowledge_base", `{"query":"how fast do parcels leave the warehouse"}`)}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{call("c2", "apply_label", `{"label":"shipping"}`), call("c3", "apply_label", `{"label":"vip"}`)}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{call("c4", "http_webhook", `{"payload":{"topic":"shipping"}}`),
			call("c5", "http_request", `{"query":{"id":"A-17"}}`)}},
		llmtest.Reply{Text: "Parcels leave within two working days; order A-17 has shipped."},
	)
	ans := b.chat(t, id, map[string]any{"message": "When will my order A-17 ship?"})
	require.Equal(t, "Parcels leave within two working days; order A-17 has shipped.", ans.Reply)
	require.Equal(t, []string{"shipping"}, ans.Labels)

	reqs := vendor.Requests()
	require.Len(t, reqs, 4)
	require.Equal(t, []string{"search_knowledge_base", "apply_label", "http_webhook", "http_request"}, reqs[0].Tools,
		"enabled tools only")
	result := func(r llmtest.Recorded, i int) llm.ToolResult {
		msgs := r.Messages
		return msgs[len(msgs)-1].ToolResults[i]
	}
	search := result(reqs[1], 0)
	require.Contains(t, search.Content, "two working days")
	require.Contains(t, search.Content, "https://acme.test/shipping")
	require.Contains(t, result(reqs[2], 0).Content, `"applied":"shipping"`)
	require.Contains(t, result(reqs[2], 1).Content, `"error":"\"vip\" is not one of the labels: billing, shipping"`,
		"only the agent's labels may be applied")
	hook, orders := result(reqs[3], 0), result(reqs[3], 1)
	require.NotContains(t, hook.Content, `"error"`)
	require.Contains(t, hook.Content, `\"ok\":true`)
	require.NotContains(t, orders.Content, `"error"`)
	require.Contains(t, orders.Content, `A-17`)
	require.Contains(t, orders.Content, `"truncated":true`, "the response is capped")

	recv.mu.Lock()
	require.Len(t, recv.reqs, 2)
	require.Equal(t, http.MethodPost, recv.reqs[0].Method)
	require.Equal(t, "/hook", recv.reqs[0].URL.Path)
	require.Equal(t, "secret-1", recv.reqs[0].Header.Get("X-Token"))
	require.Contains(t, recv.body[0], `"payload":{"topic":"shipping"}`)
	require.Contains(t, recv.body[0], ans.ConversationID)
	require.Equal(t, http.MethodGet, recv.reqs[1].Method)
	require.Equal(t, "/orders", recv.reqs[1].URL.Path)
	require.Equal(t, "A-17", recv.reqs[1].URL.Query().Get("id"))
	require.Equal(t, "Bearer abc", recv.reqs[1].Header.Get("Authorization"))
	recv.mu.Unlock()

	// The label is on the conversation, and the analytics count it.
	s := b.mcp(t, b.url, b.key)
	stats := s.ok("get_analytics", map[string]any{"agent_id": id})
	require.Equal(t, map[string]any{"shipping": float64(1)}, stats["labelCounts"])
	list := s.ok("get_conversations", map[string]any{"agent_id": id})
	require.Equal(t, []any{"shipping"}, list["conversations"].([]any)[0].(map[string]any)["labels"])

	// A knowledge search that finds nothing says so.
	vendor.Push(llmtest.Reply{ToolCalls: []llm.ToolCall{call("c6", "search_knowledge_base", `{"query":"submarine"}`)}}, llmtest.Reply{Text: "I'm sorry, I don't know."})
	b.chat(t, id, map[string]any{"message": "Do you sell submarines?", "conversation_id": ans.ConversationID})
	reqs = vendor.Requests()
	require.Contains(t, result(reqs[len(reqs)-1], 0).Content, `"results":[]`)
}

func TestAgentChatHTTPToolsRefusePrivateAddresses(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.allowPrivate = false })
	recv, srv := newToolReceiver(t, true) // https, so that the address is what is refused
	id := b.createAgent(t, strings.ReplaceAll(toolsAgentYAML, "RECEIVER", srv.URL))
	vendor := b.vendors[catalog.Beta]
	vendor.Push(llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "http_request", Arguments: json.RawMessage(`{}`)},
		{ID: "c2", Name: "http_webhook", Arguments: json.RawMessage(`{"payload":{}}`)}}}, llmtest.Reply{Text: "done"})
	b.chat(t, id, map[string]any{"message": "Check my order"})
	reqs := vendor.Requests()
	results := reqs[1].Messages[len(reqs[1].Messages)-1].ToolResults
	require.Len(t, results, 2)
	for _, r := range results {
		require.Contains(t, r.Content, `{"error":"the address is not allowed: 127.0.0.1 is a private, loopback`)
	}
	recv.mu.Lock()
	require.Empty(t, recv.reqs)
	recv.mu.Unlock()
}

func TestAgentTestPageChatsThroughTheRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.createAgent(t, chatAgentYAML)
	resp, raw := b.do(t, http.MethodGet, "/agents/"+id+"/test", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	page := string(raw)
	require.Contains(t, page, "Salut ! Je suis Camille.")
	require.Contains(t, page, `data-chat-url="/api/agents/`+id+`/chat"`)
	// The page is the webchat widget, which streams and continues the conversation by its id.
	require.Contains(t, page, `<script src="/embed/static/widget.js">`)
	require.Contains(t, string(webchat.Widget), "text/event-stream")
	require.Contains(t, string(webchat.Widget), "conversation_id")
}
