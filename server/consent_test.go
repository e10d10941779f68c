package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"switchboard/llm"
	"switchboard/llm/llmtest"
)

var yesCode = regexp.MustCompile(`YES ([0-9]{6})`)

// consentFlow is an admin's conversation with the builder assistant over /v1/responses, a
// webhook receiving the confirmation events and the event feed.
type consentFlow struct {
	b        *testBundle
	client   *openai.Client
	receiver *receiver
	feed     *feed
	last     string // the previous response, which the next turn continues
}

func (b *testBundle) consentFlow(t *testing.T) *consentFlow {
	t.Helper()
	rcv := newReceiver(t)
	resp, raw := b.do(t, http.MethodPost, "/v1/webhooks", "Bearer "+b.key,
		`{"url":"`+rcv.URL+`/hook","event_types":["confirmation.requested","confirmation.resolved"]}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	return &consentFlow{b: b, client: b.oai(b.key), receiver: rcv, feed: b.openFeed(t, b.url, "?types=confirmation.requested,confirmation.resolved", "")}
}

// say runs one stored turn continuing the conversation and returns the reply text.
func (f *consentFlow) say(t *testing.T, text string) string {
	t.Helper()
	params := responses.ResponseNewParams{Model: "beta-5.4", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}}
	if f.last != "" {
		params.PreviousResponseID = openai.String(f.last)
	}
	r, err := f.client.Responses.New(context.Background(), params)
	require.NoError(t, err)
	f.last = r.ID
	return r.OutputText()
}

// event waits for the next confirmation event on the feed and on the webhook.
func (f *consentFlow) event(t *testing.T, typ string) map[string]any {
	t.Helper()
	fr := f.feed.next(t)
	require.Equal(t, typ, fr.event)
	var env struct {
		ID   string         `json:"id"`
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(fr.data), &env))
	require.Eventually(t, func() bool {
		for _, d := range f.receiver.got() {
			// The event's evt_ id (the frame's id is its numeric cursor, which any body may
			// happen to contain).
			if strings.Contains(string(d.body), `"id":"`+env.ID+`"`) {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the event is delivered to the webhook")
	return env.Data
}

func (b *testBundle) agentExists(t *testing.T, id string) bool {
	t.Helper()
	resp, _ := b.get(t, "/api/agents/"+id)
	return resp.StatusCode == http.StatusOK
}

// parkDelete has the model ask to delete the agent; the turn parks it and the reply names
// the code (the model's own text does not). It returns the code.
func (f *consentFlow) parkDelete(t *testing.T, agentID string) string {
	t.Helper()
	f.b.vendors["beta"].Push(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "delete_agent", Arguments: json.RawMessage(`{"agent_id":"` + agentID + `"}`)}}},
		llmtest.Reply{Text: "I can do that once you confirm."},
	)
	reply := f.say(t, "please delete my agent")
	m := yesCode.FindStringSubmatch(reply)
	require.NotNil(t, m, "the reply names the code: %q", reply)
	require.True(t, f.b.agentExists(t, agentID), "parked, not run")
	requested := f.event(t, "confirmation.requested")
	require.Equal(t, m[1], requested["action_code"])
	require.Contains(t, requested["summary"], "Doomed agent")
	require.Contains(t, reply, requested["summary"])
	require.NotEmpty(t, requested["conversation_id"])
	return m[1]
}

func TestDeleteAgentIsParkedAndRunByYes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.consentFlow(t)
	id := b.newAgent(t, "Doomed agent")
	code := f.parkDelete(t, id)

	reply := f.say(t, "yes "+code)
	require.Contains(t, reply, "Done")
	require.False(t, b.agentExists(t, id), "YES <code> deleted it")
	resolved := f.event(t, "confirmation.resolved")
	require.Equal(t, "approved", resolved["resolution"])
	require.Equal(t, code, resolved["action_code"])

	again := f.say(t, "YES "+code)
	require.Contains(t, again, "already approved")
}

func TestAnotherReplyRejectsTheParkedDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.consentFlow(t)
	id := b.newAgent(t, "Doomed agent")
	f.parkDelete(t, id)
	b.vendors["beta"].Push(llmtest.Reply{Text: "All right, I will keep it."})
	require.Equal(t, "All right, I will keep it.", f.say(t, "on second thought, keep it"))
	require.Equal(t, "rejected", f.event(t, "confirmation.resolved")["resolution"])
	require.True(t, b.agentExists(t, id))
}

func TestAnUnansweredDeleteExpires(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.confirmationTTL = 300 * time.Millisecond })
	f := b.consentFlow(t)
	id := b.newAgent(t, "Doomed agent")
	code := f.parkDelete(t, id)
	// The sweep resolves it without any turn.
	require.Equal(t, "expired", f.event(t, "confirmation.resolved")["resolution"])
	reply := f.say(t, "YES "+code)
	require.Contains(t, reply, "already expired")
	require.True(t, b.agentExists(t, id), "an expired code never runs")
}

// TestAPIChatIsTheSamePipeline: POST /api/chat answers JSON or a stream, parks and confirms
// like /v1, and its conversation continues on /v1.
func TestAPIChatIsTheSamePipeline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newAgent(t, "Doomed agent")
	vendor := b.vendors["alpha"] // the default model's family
	vendor.Push(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "delete_agent", Arguments: json.RawMessage(`{"agent_id":"` + id + `"}`)}}},
		llmtest.Reply{Text: "Reply with the code to confirm."},
	)
	resp, raw := b.do(t, http.MethodPost, "/api/chat", "Bearer "+b.key, `{"message":"delete the doomed agent"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var first struct {
		ConversationID string `json:"conversation_id"`
		Reply          string `json:"reply"`
		Usage          struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
		PendingActions []struct {
			Code, Summary string
		} `json:"pending_actions"`
	}
	require.NoError(t, json.Unmarshal(raw, &first))
	require.Regexp(t, `^mc-`, first.ConversationID)
	require.Len(t, first.PendingActions, 1)
	code := first.PendingActions[0].Code
	require.Contains(t, first.Reply, "YES "+code)
	require.Positive(t, first.Usage.TotalTokens)
	require.True(t, b.agentExists(t, id))

	// The confirmation, streamed: conversation first, the reply in deltas, then done.
	frames := b.assistantStream(t, `{"message":"YES `+code+`","conversation_id":"`+first.ConversationID+`","stream":true}`)
	require.Equal(t, "conversation", frames[0].event)
	require.JSONEq(t, `{"conversation_id":"`+first.ConversationID+`"}`, frames[0].data)
	require.Equal(t, "delta", frames[1].event)
	last := frames[len(frames)-1]
	require.Equal(t, "done", last.event)
	var done struct {
		Reply string `json:"reply"`
	}
	require.NoError(t, json.Unmarshal([]byte(last.data), &done))
	require.Contains(t, done.Reply, "Done")
	require.False(t, b.agentExists(t, id))

	// The same conversation on /v1: the history holds both turns.
	conv := first.ConversationID
	c := b.oai(b.key)
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "beta-5.4",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("what did we do?")}},
		option.WithJSONSet("conversation", conv))
	require.NoError(t, err)
	reqs := b.vendors["beta"].Requests()
	var texts []string
	for _, m := range reqs[len(reqs)-1].Messages {
		texts = append(texts, m.Text)
	}
	require.Contains(t, texts, "delete the doomed agent")
	require.Contains(t, texts, "YES "+code)

	// Accept: text/event-stream streams without `stream: true`.
	accept := b.assistantStream(t, `{"message":"hello again","conversation_id":"`+conv+`"}`)
	require.Equal(t, "done", accept[len(accept)-1].event)

	// Unknown conversation: 404 naming the field, before anything runs.
	resp, raw = b.do(t, http.MethodPost, "/api/chat", "Bearer "+b.key, `{"message":"hi","conversation_id":"mc-nope"}`)
	e := errorOf(t, resp, raw, http.StatusNotFound)
	require.Equal(t, "conversation_id", str(e.Param))
}

// assistantStream posts to /api/chat asking for an event stream and returns its frames.
func (b *testBundle) assistantStream(t *testing.T, body string) []sseFrame {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+"/api/chat", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var frames []sseFrame
	var fr sseFrame
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			frames = append(frames, fr)
			fr = sseFrame{}
		case strings.HasPrefix(line, "event: "):
			fr.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			fr.data = line[6:]
		}
	}
	require.NoError(t, sc.Err())
	return frames
}
