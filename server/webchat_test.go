package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/llm/llmtest"
	"switchboard/openapi"
	"switchboard/openapi/contract"
	"switchboard/store"
	"switchboard/webchat"
)

const webchatAgentYAML = `agent:
  name: Shop Helper
  language: de
  persona:
    display_name: Lena
    tone: friendly
    greeting: Hallo! Ich bin Lena.
  llm:
    provider: beta
    model: beta-5.4-mini
    temperature: 0.5
    max_tokens: 300
    system_prompt: Du hilfst Kunden des Ladens.
  channels:
    - type: webchat
`

// deployWebchat creates an agent and deploys it on the webchat channel with config.
func (b *testBundle) deployWebchat(t *testing.T, config string) (agentID, deploymentID string) {
	t.Helper()
	agentID = b.createAgent(t, webchatAgentYAML)
	d, err := b.store.DeployAgent(context.Background(), b.workspace.ID, store.Deploy{AgentID: mustUUID(t, agentID),
		ChannelType: "webchat", Config: json.RawMessage(config)})
	require.NoError(t, err)
	return agentID, d.ID.String()
}

// public sends a request without a key, with an Origin header when origin is not empty.
func (b *testBundle) public(t *testing.T, method, path, origin, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.url+path, r)
	require.NoError(t, err)
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := embedClient(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, raw
}

// embedClient checks every answer of the public webchat routes (stream frames included)
// against openapi/embed.yaml.
func embedClient(t *testing.T) *http.Client {
	return contract.Client(t, contract.Load(t, openapi.EmbedYAML))
}

type webchatReply struct {
	VisitorToken string `json:"visitor_token"`
	Reply        string `json:"reply"`
	Status       string `json:"status"`
}

func webchatErrorCode(t *testing.T, raw []byte) string {
	t.Helper()
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &env), string(raw))
	return env.Error.Code
}

func TestWebchatBootstrapChatAndVisitorTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, dep := b.deployWebchat(t, `{}`)
	vendor := b.vendors[catalog.Beta]

	resp, raw := b.public(t, http.MethodGet, "/embed/"+dep+"/config", "https://shop.example", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Equal(t, "https://shop.example", resp.Header.Get("Access-Control-Allow-Origin"))
	var boot map[string]any
	require.NoError(t, json.Unmarshal(raw, &boot))
	require.Equal(t, "Lena", boot["display_name"])
	require.Equal(t, "Hallo! Ich bin Lena.", boot["greeting"])
	require.Equal(t, "de", boot["language"])
	require.Equal(t, true, boot["available"])
	require.Nil(t, boot["disclosure"], "no voice channel: the disclosure does not apply")

	// A first message opens a conversation and hands out the visitor's token.
	vendor.Push(llmtest.Reply{Text: "Wir öffnen um 9 Uhr."})
	resp, raw = b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "https://shop.example", `{"message":"Wann öffnet ihr?"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var first webchatReply
	require.NoError(t, json.Unmarshal(raw, &first))
	require.Equal(t, "Wir öffnen um 9 Uhr.", first.Reply)
	require.NotEmpty(t, first.VisitorToken)

	// The token continues the same conversation, streamed.
	vendor.Push(llmtest.Reply{Text: "Bis 18 Uhr."})
	frames := b.webchatStream(t, dep, `{"message":"Und bis wann?","visitor_token":"`+first.VisitorToken+`"}`)
	require.Equal(t, "conversation", frames[0].event)
	require.Contains(t, frames[0].data, first.VisitorToken)
	require.Equal(t, "done", frames[len(frames)-1].event)
	var deltas strings.Builder
	for _, f := range frames {
		if f.event == "delta" {
			var d struct{ Text string }
			require.NoError(t, json.Unmarshal([]byte(f.data), &d))
			deltas.WriteString(d.Text)
		}
	}
	require.Equal(t, "Bis 18 Uhr.", deltas.String())
	require.Equal(t, 1, b.count(t, "conversations"))

	// A token that the server did not issue (or issued for another deployment) is refused,
	// so a visitor cannot reach someone else's conversation.
	other := webchat.NewTokens([]byte("guess")).Issue(mustUUID(t, dep), "mc-1")
	resp, raw = b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "", `{"message":"hi","visitor_token":"`+other+`"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(raw))
	require.Equal(t, "visitor_token_invalid", webchatErrorCode(t, raw))
	_, dep2 := b.deployWebchat(t, `{}`)
	resp, raw = b.public(t, http.MethodPost, "/embed/"+dep2+"/chat", "", `{"message":"hi","visitor_token":"`+first.VisitorToken+`"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(raw))

	// Message limits.
	resp, raw = b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "", `{"message":"`+strings.Repeat("x", 4001)+`"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(raw))
	require.Equal(t, "invalid_value", webchatErrorCode(t, raw))
	require.Equal(t, 1, b.count(t, "conversations"), "refused messages write nothing")
}

func (b *testBundle) webchatStream(t *testing.T, dep, body string) []chatFrame {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+"/embed/"+dep+"/chat", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := embedClient(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
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

func TestWebchatOriginsAndCORS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, dep := b.deployWebchat(t, `{"allowed_origins":["https://shop.example"]}`)

	resp, raw := b.public(t, http.MethodOptions, "/embed/"+dep+"/chat", "https://shop.example", "",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type")
	require.Equal(t, http.StatusNoContent, resp.StatusCode, string(raw))
	require.Equal(t, "https://shop.example", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Methods"), "POST")
	require.Contains(t, strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "content-type")

	for _, m := range []string{http.MethodOptions, http.MethodGet, http.MethodPost} {
		path, body := "/embed/"+dep+"/config", ""
		if m != http.MethodGet {
			path, body = "/embed/"+dep+"/chat", `{"message":"hi"}`
		}
		resp, raw = b.public(t, m, path, "https://evil.example", body)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, m+" "+string(raw))
		require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "origin_not_allowed", webchatErrorCode(t, raw))
	}

	// A message's body is read with its deployment, but refused after it: an unknown
	// deployment is 404 and a refused origin 403 whatever the body, then the body's 400.
	for _, c := range []struct {
		dep, origin, code string
		status            int
	}{
		{uuid.NewString(), "https://shop.example", "deployment_not_found", http.StatusNotFound},
		{dep, "https://evil.example", "origin_not_allowed", http.StatusForbidden},
		{dep, "https://shop.example", "invalid_json", http.StatusBadRequest},
	} {
		resp, raw = b.public(t, http.MethodPost, "/embed/"+c.dep+"/chat", c.origin, `{"message":`)
		require.Equal(t, c.status, resp.StatusCode, string(raw))
		require.Equal(t, c.code, webchatErrorCode(t, raw))
	}
	require.Equal(t, 0, b.count(t, "conversations"))
}

func TestWebchatUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agentID, dep := b.deployWebchat(t, `{}`)

	// No such deployment, or one that is not webchat: 404.
	for _, path := range []string{"/embed/" + uuid.NewString() + "/config", "/embed/nope/chat"} {
		method, body := http.MethodGet, ""
		if strings.HasSuffix(path, "/chat") {
			method, body = http.MethodPost, `{"message":"hi"}`
		}
		resp, raw := b.public(t, method, path, "", body)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, string(raw))
		require.Equal(t, "deployment_not_found", webchatErrorCode(t, raw))
	}
	voice, err := b.store.DeployAgent(context.Background(), b.workspace.ID, store.Deploy{AgentID: mustUUID(t, agentID), ChannelType: "telco_voice", Config: json.RawMessage(`{}`)})
	require.NoError(t, err)
	resp, raw := b.public(t, http.MethodGet, "/embed/"+voice.ID.String()+"/config", "", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(raw))

	// A disabled agent: 409 on both routes, and no model call (the fake has no reply queued:
	// a call would fail the test).
	_, err = b.store.Pool().Exec(context.Background(), "UPDATE agents SET status = 'disabled' WHERE id = $1", agentID)
	require.NoError(t, err)
	resp, raw = b.public(t, http.MethodGet, "/embed/"+dep+"/config", "", "")
	require.Equal(t, http.StatusConflict, resp.StatusCode, string(raw))
	require.Equal(t, "agent_disabled", webchatErrorCode(t, raw))
	resp, raw = b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "", `{"message":"hi"}`)
	require.Equal(t, http.StatusConflict, resp.StatusCode, string(raw))
	require.NotContains(t, string(raw), "update_agent", "visitors see no management hints")
	require.Equal(t, 0, b.count(t, "conversations"))

	// A workspace without credit: 403 insufficient_quota, no model call either.
	_, err = b.store.Pool().Exec(context.Background(), "UPDATE agents SET status = 'enabled' WHERE id = $1", agentID)
	require.NoError(t, err)
	_, err = b.store.Pool().Exec(context.Background(), "UPDATE workspaces SET balance_nano_usd = 0 WHERE id = $1", b.workspace.ID)
	require.NoError(t, err)
	resp, raw = b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "", `{"message":"hi"}`)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, string(raw))
	require.Equal(t, "insufficient_quota", webchatErrorCode(t, raw))
	require.Equal(t, 0, b.count(t, "conversations"))
}

func TestWebchatVisitorRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, dep := b.deployWebchat(t, `{}`)
	// Refused messages count: the visitor's budget is spent without a model call.
	for range webchat.VisitorRPM {
		resp, raw := b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "https://shop.example", `{"message":" "}`)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(raw))
	}
	resp, raw := b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "https://shop.example", `{"message":"hi"}`)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, string(raw))
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
	require.Equal(t, "https://shop.example", resp.Header.Get("Access-Control-Allow-Origin"), "the widget can read the 429")
	require.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "Retry-After")
}

// The loader, the widget's files and the contract itself are served to any page, and their
// answers follow openapi/embed.yaml, where every operation is public.
func TestWebchatStaticRoutesFollowTheContract(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, dep := b.deployWebchat(t, `{}`)
	for path, ctype := range map[string]string{
		"/embed/" + dep + ".js":    "text/javascript",
		"/embed/static/widget.js":  "text/javascript",
		"/embed/static/widget.css": "text/css",
		"/openapi/embed.yaml":      "application/yaml",
	} {
		resp, raw := b.public(t, http.MethodGet, path, "https://shop.example", "")
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), ctype), path)
		require.NotEmpty(t, raw)
	}
	resp, raw := b.public(t, http.MethodGet, "/embed/"+uuid.NewString()+".js", "", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(raw))

	spec, err := openapi3.NewLoader().LoadFromData(openapi.EmbedYAML)
	require.NoError(t, err)
	var ops []string
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, method+" "+path)
			require.Equal(t, "public", op.Extensions["x-permission"], path)
		}
	}
	require.ElementsMatch(t, []string{"GET /embed/{deploymentId}.js", "GET /embed/static/widget.js", "GET /embed/static/widget.css",
		"GET /embed/{deploymentId}/config", "OPTIONS /embed/{deploymentId}/config", "POST /embed/{deploymentId}/chat",
		"OPTIONS /embed/{deploymentId}/chat", "GET /embed/{deploymentId}/stream"}, ops, "every public webchat route is in the contract")
}
