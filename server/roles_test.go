package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/openapi"
)

// roles, from the least to the most powerful.
var roles = []string{"viewer", "member", "admin", "owner"}

func roleRank(r string) int { return slices.Index(roles, r) }

// outcome is what one call answered: its HTTP status (200 for a tool that succeeded), and
// the error code if it failed.
type outcome struct {
	status int
	code   string
}

// probe is one operation of a surface and the least role that may call it, as the roles
// issue's table says; call makes a valid call of it with a key.
type probe struct {
	op    string
	least string
	call  func(t *testing.T, key string) outcome
}

// TestPermissionTableOnEverySurface walks every operation of /v1 (through openai-go), /api and
// the MCP tools (through the mcp-go client) with a key of each role: a role below the
// operation's least role is refused with 403 permission_error role_not_allowed (a failed tool
// result on MCP), and a role at or above it is not refused. The expected least roles are
// written out here from the table, and the test fails when an operation of either
// document or a tool has no probe, so a new route cannot go unchecked.
func TestPermissionTableOnEverySurface(t *testing.T) {
	t.Parallel()
	b := setup(t)
	keys := map[string]string{}
	for _, r := range roles {
		keys[r] = b.newKey(t, b.workspace, r)
	}
	f := b.fixtures(t)

	routes := b.httpProbes(f)
	require.ElementsMatch(t, operationIDs(t), probeNames(routes), "every operation of /v1 and /api has a probe")
	for _, p := range routes {
		for _, r := range roles {
			got := p.call(t, keys[r])
			b.expect(t, p, r, got)
		}
	}

	tools := b.toolProbes(f)
	for _, r := range roles {
		s := b.mcp(t, b.url, keys[r])
		listed, err := s.c.ListTools(context.Background(), mcpgo.ListToolsRequest{})
		require.NoError(t, err)
		var names []string
		for _, tool := range listed.Tools {
			names = append(names, tool.Name)
		}
		require.Len(t, names, len(tools), "tools/list shows every tool, each naming the role it needs")
		for _, tool := range listed.Tools {
			for _, p := range tools {
				if p.op == tool.Name {
					require.Contains(t, tool.Description, "Role needed: "+p.least, tool.Name)
				}
			}
		}
		for _, p := range tools {
			out := s.call(p.op, p.args(t))
			got := outcome{status: http200}
			if out["success"] == false {
				got = outcome{status: 400, code: out["error"].(map[string]any)["code"].(string)}
			}
			b.expect(t, probe{op: "tool " + p.op, least: p.least}, r, got)
		}
	}
	require.Len(t, tools, 18, "the ten agent tools, the six bulk tools, get_bulk_run and confirm_action")
}

const http200 = http.StatusOK

func (b *testBundle) expect(t *testing.T, p probe, role string, got outcome) {
	t.Helper()
	if roleRank(role) >= roleRank(p.least) {
		require.NotEqual(t, "role_not_allowed", got.code, "%s with a %s key must not be refused", p.op, role)
		require.Less(t, got.status, 500, "%s with a %s key: %s", p.op, role, got.code)
		return
	}
	require.Equal(t, "role_not_allowed", got.code, "%s with a %s key must be refused (least role %s)", p.op, role, p.least)
	if !strings.HasPrefix(p.op, "tool ") {
		require.Equal(t, http.StatusForbidden, got.status, p.op)
	}
}

func probeNames(ps []probe) []string {
	var out []string
	for _, p := range ps {
		out = append(out, strings.TrimSuffix(p.op, " (privileged)"))
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// operationIDs are the operations of both documents.
func operationIDs(t *testing.T) []string {
	var out []string
	for _, doc := range [][]byte{openapi.V1YAML, openapi.APIYAML} {
		spec, err := openapi3.NewLoader().LoadFromData(doc)
		require.NoError(t, err)
		for _, item := range spec.Paths.Map() {
			for _, op := range item.Operations() {
				out = append(out, op.OperationID)
			}
		}
	}
	sort.Strings(out)
	return out
}

// fixtures are the things the probes act on, made with the owner's rights.
type fixtures struct {
	agentID, responseID, webhookID string
	uploadID                       string
	receiver                       string
	channelID                      string // a webchat channel (connected without a carrier)
}

func (b *testBundle) fixtures(t *testing.T) fixtures {
	t.Helper()
	f := fixtures{agentID: b.newAgent(t, "Table agent"), receiver: newReceiver(t).URL + "/hook"}
	r, err := b.oai(b.key).Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "beta-5.4", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	require.NoError(t, err)
	f.responseID = r.ID
	f.webhookID = b.newWebhook(t, f.receiver)
	resp, raw := b.doRaw(t, http.MethodPost, "/api/uploads?filename=faq.txt", b.key, "text/plain", "We open at nine.")
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var up struct{ ID string }
	require.NoError(t, json.Unmarshal(raw, &up))
	f.uploadID = up.ID
	resp, raw = b.do(t, http.MethodPost, "/api/channels", "Bearer "+b.key, `{"provider":"webchat","name":"Site"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var ch struct{ ID string }
	require.NoError(t, json.Unmarshal(raw, &ch))
	f.channelID = ch.ID
	return f
}

func (b *testBundle) newAgent(t *testing.T, name string) string {
	t.Helper()
	resp, raw := b.doYAML(t, "Bearer "+b.key, agentYAML(name))
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var created struct {
		AgentID string `json:"agentId"`
	}
	require.NoError(t, json.Unmarshal(raw, &created))
	return created.AgentID
}

func (b *testBundle) doYAML(t *testing.T, auth, yaml string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+"/api/agents", strings.NewReader(yaml))
	require.NoError(t, err)
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp, readAll(t, resp)
}

func (b *testBundle) newWebhook(t *testing.T, url string) string {
	t.Helper()
	resp, raw := b.do(t, http.MethodPost, "/v1/webhooks", "Bearer "+b.key, `{"url":"`+url+`"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var e struct{ ID string }
	require.NoError(t, json.Unmarshal(raw, &e))
	return e.ID
}

// viaOpenAI turns an openai-go call's error into an outcome.
func viaOpenAI(err error) outcome {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return outcome{status: apiErr.StatusCode, code: apiErr.Code}
	}
	if err != nil {
		return outcome{status: 599, code: err.Error()}
	}
	return outcome{status: http200}
}

// viaHTTP calls /api (or a /v1 route openai-go has no method for) through the
// contract-checking client.
func (b *testBundle) viaHTTP(t *testing.T, method, path, key, body string) outcome {
	t.Helper()
	resp, raw := b.do(t, method, path, "Bearer "+key, body)
	got := outcome{status: resp.StatusCode}
	if resp.StatusCode >= 400 {
		var env struct {
			Error struct {
				Code *string `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(raw, &env), string(raw))
		got.code = str(env.Error.Code)
	}
	return got
}

func (b *testBundle) httpProbes(f fixtures) []probe {
	ctx := context.Background()
	raw := func(method, path, body string) func(*testing.T, string) outcome {
		return func(t *testing.T, key string) outcome {
			c := b.openai(key)
			var params any
			if body != "" {
				params = json.RawMessage(body)
			}
			var res []byte // any body, a 204's empty one included
			return viaOpenAI(c.Execute(ctx, method, path, params, &res))
		}
	}
	api := func(method, path, body string) func(*testing.T, string) outcome {
		return func(t *testing.T, key string) outcome { return b.viaHTTP(t, method, path, key, body) }
	}
	return append([]probe{
		{"createResponse", "viewer", func(t *testing.T, key string) outcome {
			_, err := b.oai(key).Responses.New(ctx, responses.ResponseNewParams{Model: "beta-5.4",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}})
			return viaOpenAI(err)
		}},
		{"getResponse", "viewer", func(t *testing.T, key string) outcome {
			_, err := b.oai(key).Responses.Get(ctx, f.responseID, responses.ResponseGetParams{})
			return viaOpenAI(err)
		}},
		{"createChatCompletion", "viewer", func(t *testing.T, key string) outcome {
			_, err := b.oai(key).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "beta-5.4",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
			return viaOpenAI(err)
		}},
		{"listModels", "viewer", func(t *testing.T, key string) outcome {
			_, err := b.oai(key).Models.List(ctx)
			return viaOpenAI(err)
		}},
		{"retrieveModel", "viewer", func(t *testing.T, key string) outcome {
			_, err := b.oai(key).Models.Get(ctx, "beta-5.4")
			return viaOpenAI(err)
		}},
		{"createWebhook", "admin", raw(http.MethodPost, "webhooks", `{"url":"`+f.receiver+`"}`)},
		{"listWebhooks", "viewer", raw(http.MethodGet, "webhooks", "")},
		{"getWebhook", "viewer", raw(http.MethodGet, "webhooks/"+f.webhookID, "")},
		{"updateWebhook", "admin", raw(http.MethodPatch, "webhooks/"+f.webhookID, `{"description":"checked"}`)},
		{"deleteWebhook", "admin", func(t *testing.T, key string) outcome {
			return raw(http.MethodDelete, "webhooks/"+b.newWebhook(t, f.receiver), "")(t, key)
		}},
		{"listWebhookAttempts", "viewer", raw(http.MethodGet, "webhooks/"+f.webhookID+"/attempts", "")},
		{"redeliverWebhookEvent", "admin", raw(http.MethodPost, "webhooks/"+f.webhookID+"/redeliver", `{"event_id":"evt_0000000000000000000000"}`)},
		{"streamEvents", "viewer", func(t *testing.T, key string) outcome { return b.streamStatus(t, key) }},

		{"listAgents", "viewer", api(http.MethodGet, "/api/agents", "")},
		{"getAgent", "viewer", api(http.MethodGet, "/api/agents/"+f.agentID, "")},
		{"createAgent", "member", func(t *testing.T, key string) outcome {
			resp, raw := b.doYAML(t, "Bearer "+key, agentYAML("Made by a key"))
			got := outcome{status: resp.StatusCode}
			if resp.StatusCode >= 400 {
				got.code = errorOf(t, resp, raw, resp.StatusCode).codeOrEmpty()
			}
			return got
		}},
		{"updateAgent", "member", api(http.MethodPatch, "/api/agents/"+f.agentID, `{"name":"Renamed"}`)},
		{"listChannels", "viewer", api(http.MethodGet, "/api/channels", "")},
		{"createChannel", "admin", api(http.MethodPost, "/api/channels", `{"provider":"sms","name":"Line"}`)},
		{"getChannel", "viewer", api(http.MethodGet, "/api/channels/"+f.channelID, "")},
		{"updateChannel", "admin", api(http.MethodPatch, "/api/channels/"+f.channelID, `{"name":"Renamed site"}`)},
		{"deleteChannel", "admin", api(http.MethodDelete, "/api/channels/"+f.channelID, "")},
		{"chat", "viewer", api(http.MethodPost, "/api/chat", `{"message":"hello","model":"beta-5.4"}`)},
		{"listKeys", "admin", api(http.MethodGet, "/api/keys", "")},
		// Creating keys needs a session (sessions_test.go): a user of the key's role calls it.
		{"createKey", "admin", func(t *testing.T, key string) outcome {
			return b.viaSessionOfKey(t, http.MethodPost, "/api/keys", key, `{"role":"viewer"}`)
		}},
		{"createKey (privileged)", "owner", func(t *testing.T, key string) outcome {
			return b.viaSessionOfKey(t, http.MethodPost, "/api/keys", key, `{"role":"admin"}`)
		}},
		{"agentChat", "viewer", api(http.MethodPost, "/api/agents/"+f.agentID+"/chat", `{"message":"hello"}`)},
		{"createUpload", "member", func(t *testing.T, key string) outcome {
			return b.viaRaw(t, http.MethodPost, "/api/uploads?filename=notes.txt", key, "text/plain", "Parking is free after six.")
		}},
		{"getUpload", "viewer", api(http.MethodGet, "/api/uploads/"+f.uploadID, "")},
		// Recordings: agents.write uploads and deletes, read lists.
		{"listRecordings", "viewer", api(http.MethodGet, "/api/recordings", "")},
		{"createRecording", "member", func(t *testing.T, key string) outcome {
			return b.viaRaw(t, http.MethodPost, "/api/recordings", key, "multipart/form-data; boundary=rb", recordingProbeBody)
		}},
		{"getRecording", "viewer", api(http.MethodGet, "/api/recordings/00000000-0000-4000-8000-00000000a11d", "")},
		{"deleteRecording", "member", api(http.MethodDelete, "/api/recordings/00000000-0000-4000-8000-00000000a11d", "")},
		{"listBlockedVisitors", "viewer", api(http.MethodGet, "/api/webchat/blocked-visitors", "")},
		{"blockVisitor", "member", api(http.MethodPost, "/api/webchat/blocked-visitors", `{"visitor_id":"mc-nosuchvisitor"}`)},
		{"unblockVisitor", "member", api(http.MethodDelete, "/api/webchat/blocked-visitors/mc-nosuchvisitor", "")},
		{"revokeKey", "admin", func(t *testing.T, key string) outcome {
			return b.viaHTTP(t, http.MethodDelete, "/api/keys/"+b.keyIDOfNew(t, "member"), key, "")
		}},
		{"revokeKey (privileged)", "owner", func(t *testing.T, key string) outcome {
			return b.viaHTTP(t, http.MethodDelete, "/api/keys/"+b.keyIDOfNew(t, "admin"), key, "")
		}},
	}, append(append(append(append(b.campaignProbes(), b.inboxProbes()...), b.deploymentProbes(f)...), trustProbes(api)...), b.workflowProbes()...)...)
}

// trustProbes are the routes of issue 48: the audit log, erasure, retention.
func trustProbes(api func(method, path, body string) func(*testing.T, string) outcome) []probe {
	return []probe{
		{"listAuditLog", "admin", api(http.MethodGet, "/api/audit-log", "")},
		// An unknown contact: the 404 comes after the role check.
		{"eraseContact", "admin", api(http.MethodPost, "/api/contacts/00000000-0000-4000-8000-000000000000/erase", "")},
		{"getRetention", "viewer", api(http.MethodGet, "/api/retention", "")},
		{"setRetention", "admin", api(http.MethodPut, "/api/retention", `{"retention_days":null}`)},
	}
}

func (e apiError) codeOrEmpty() string {
	if e.Code == nil {
		return ""
	}
	return *e.Code
}

// keyIDOfNew makes a key of the role and returns its id.
func (b *testBundle) keyIDOfNew(t *testing.T, role string) string {
	t.Helper()
	_, sum, display := apikey.New()
	k, err := b.store.CreateKey(context.Background(), b.workspace.ID, role, sum, display)
	require.NoError(t, err)
	return k.ID.String()
}

// streamStatus opens the event feed and reports the status it answers with.
func (b *testBundle) streamStatus(t *testing.T, key string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/v1/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	got := outcome{status: resp.StatusCode}
	if resp.StatusCode >= 400 {
		got.code = errorOf(t, resp, readAll(t, resp), resp.StatusCode).codeOrEmpty()
	}
	return got
}

// toolProbe is one MCP tool, the least role that may call it, and valid arguments.
type toolProbe struct {
	op, least string
	args      func(t *testing.T) map[string]any
}

func (b *testBundle) toolProbes(f fixtures) []toolProbe {
	fixed := func(args map[string]any) func(*testing.T) map[string]any {
		return func(*testing.T) map[string]any { return args }
	}
	return []toolProbe{
		{"get_agent", "viewer", fixed(map[string]any{"agent_id": f.agentID})},
		{"list_agents", "viewer", fixed(nil)},
		{"get_conversations", "viewer", fixed(map[string]any{"agent_id": f.agentID})},
		{"get_analytics", "viewer", fixed(map[string]any{"agent_id": f.agentID})},
		{"create_agent", "member", fixed(map[string]any{"yaml": agentYAML("Tool agent")})},
		{"update_agent", "member", fixed(map[string]any{"agent_id": f.agentID, "updates": map[string]any{"name": "Tool renamed"}})},
		{"crawl_website", "member", fixed(map[string]any{"agent_id": f.agentID, "url": f.receiver})},
		{"generate_test_link", "member", fixed(map[string]any{"agent_id": f.agentID})},
		{"deploy_agent", "admin", fixed(map[string]any{"agent_id": f.agentID, "channel": "webchat"})},
		{"delete_agent", "admin", func(t *testing.T) map[string]any { return map[string]any{"agent_id": b.newAgent(t, "Doomed")} }},
		// The bulk tools (package bulk) and confirm_action.
		{"delete_conversations", "admin", fixed(map[string]any{"filter": map[string]any{"channel": "msgapp_4"}})},
		{"delete_channels", "admin", fixed(map[string]any{"filter": map[string]any{"provider": "msgapp_4"}})},
		{"delete_contacts", "admin", fixed(map[string]any{"filter": map[string]any{"tag": "nobody"}})},
		{"delete_campaigns", "admin", fixed(map[string]any{"filter": map[string]any{"status": "draft"}})},
		{"undeploy_agents", "admin", fixed(map[string]any{"filter": map[string]any{"agent_id": f.agentID}})},
		{"cancel_campaigns", "admin", fixed(map[string]any{"filter": map[string]any{"status": "running"}})},
		{"get_bulk_run", "admin", fixed(map[string]any{"run_id": "bulk_unknown"})},
		{"confirm_action", "viewer", fixed(map[string]any{"action_id": "act_unknown", "code": "123456"})},
	}
}

// TestAssistantToolsFollowTheRole: a turn's assistant is offered exactly the tools its key's
// role may use (none it may not), and an ephemeral chat completion only the read-only ones.
func TestAssistantToolsFollowTheRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	vendor := b.vendors["beta"]
	read := []string{"get_agent", "list_agents", "get_conversations", "get_analytics"}
	member := append(slices.Clone(read), "create_agent", "update_agent", "crawl_website", "generate_test_link")
	admin := append(slices.Clone(member), "deploy_agent", "delete_agent", "buy_phone_number",
		"delete_conversations", "delete_channels", "delete_contacts", "delete_campaigns", "undeploy_agents", "cancel_campaigns", "get_bulk_run")
	want := map[string][]string{"viewer": read, "member": member, "admin": admin, "owner": admin}
	for _, r := range roles {
		c := b.openai(b.newKey(t, b.workspace, r))
		_, err := c.Responses.New(context.Background(), responses.ResponseNewParams{Model: "beta-5.4",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("what can you do?")}})
		require.NoError(t, err)
		reqs := vendor.Requests()
		require.ElementsMatch(t, want[r], reqs[len(reqs)-1].Tools, "a stored turn of a %s key", r)
	}
	_, err := b.oai(b.newKey(t, b.workspace, "owner")).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "beta-5.4", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	require.NoError(t, err)
	reqs := vendor.Requests()
	require.ElementsMatch(t, append(slices.Clone(read), "generate_test_link", "get_bulk_run"), reqs[len(reqs)-1].Tools,
		"an ephemeral chat completion is offered read-only tools only, whatever the role")
}

// oai is b.openai as a pointer, whose service methods can be called in place.
func (b *testBundle) oai(key string) *openai.Client {
	c := b.openai(key)
	return &c
}

// doRaw sends a body of any content type through the contract-checking client.
func (b *testBundle) doRaw(t *testing.T, method, path, key, contentType, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, b.url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", contentType)
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp, readAll(t, resp)
}

func (b *testBundle) viaRaw(t *testing.T, method, path, key, contentType, body string) outcome {
	t.Helper()
	resp, raw := b.doRaw(t, method, path, key, contentType, body)
	got := outcome{status: resp.StatusCode}
	if resp.StatusCode >= 400 {
		got.code = errorOf(t, resp, raw, resp.StatusCode).codeOrEmpty()
	}
	return got
}
