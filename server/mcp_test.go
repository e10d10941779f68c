package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"switchboard/sms/smstest"
)

// mcpSession is a real MCP client over streamable HTTP, authenticated with a key ("" sends
// no Authorization header).
type mcpSession struct {
	t *testing.T
	c *mcpclient.Client
}

func (b *testBundle) mcp(t *testing.T, base, key string) *mcpSession {
	t.Helper()
	headers := map[string]string{}
	if key != "" {
		headers["Authorization"] = "Bearer " + key
	}
	c, err := mcpclient.NewStreamableHttpClient(base+"/mcp", transport.WithHTTPHeaders(headers))
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "switchboard-tests", Version: "1"}
	_, err = c.Initialize(ctx, init)
	require.NoError(t, err)
	return &mcpSession{t: t, c: c}
}

// call runs a tool and returns its structured result.
func (s *mcpSession) call(name string, args map[string]any) map[string]any {
	s.t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := s.c.CallTool(context.Background(), req)
	require.NoError(s.t, err, "a failure is a tool result, never a protocol error")
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(s.t, err)
	var out map[string]any
	require.NoError(s.t, json.Unmarshal(raw, &out), string(raw))
	require.Equal(s.t, out["success"] == false, res.IsError, "isError follows success")
	return out
}

func (s *mcpSession) ok(name string, args map[string]any) map[string]any {
	s.t.Helper()
	out := s.call(name, args)
	require.Equal(s.t, true, out["success"], "%s: %v", name, out)
	return out
}

// fails calls a tool that must fail, and returns its error object.
func (s *mcpSession) fails(name string, args map[string]any, code string) map[string]any {
	s.t.Helper()
	out := s.call(name, args)
	require.Equal(s.t, false, out["success"], "%s must fail: %v", name, out)
	e := out["error"].(map[string]any)
	require.Equal(s.t, code, e["code"], "%v", e)
	require.NotEmpty(s.t, e["message"])
	require.NotContains(s.t, e["message"], "goroutine", "no stack traces")
	return e
}

func readBlueprint(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(raw)
}

const voiceAgent = `agent:
  name: Front Desk
  language: en-US
  persona:
    display_name: Ava
    tone: friendly
    greeting: Hello! How can I help?
  llm:
    provider: alpha
    model: alpha-haiku-4-5
    temperature: 0.3
    max_tokens: 512
    system_prompt: You answer the phone for a dental clinic.
  channels:
    - type: telco_voice
`

const textAgent = `agent:
  name: %s
  language: en
  persona:
    display_name: Helper
    tone: professional
    greeting: Hi there.
  llm:
    provider: beta
    model: beta-5.4-mini
    temperature: 0.5
    max_tokens: 256
    system_prompt: You help customers with their orders.
`

func agentYAML(name string) string { return strings.Replace(textAgent, "%s", name, 1) }

func TestMCPListsTheTenToolsWithTheirSchemas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	res, err := s.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	schemas := map[string]map[string]any{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		raw, _ := json.Marshal(tool.InputSchema)
		if len(tool.RawInputSchema) > 0 {
			raw = tool.RawInputSchema
		}
		var schema map[string]any
		require.NoError(t, json.Unmarshal(raw, &schema))
		schemas[tool.Name] = schema
	}
	sort.Strings(names)
	require.Equal(t, []string{"cancel_campaigns", "confirm_action", "crawl_website", "create_agent", "delete_agent", "delete_campaigns",
		"delete_channels", "delete_contacts", "delete_conversations", "deploy_agent", "generate_test_link",
		"get_agent", "get_analytics", "get_bulk_run", "get_conversations", "list_agents", "undeploy_agents", "update_agent"}, names)
	require.Equal(t, []any{"yaml"}, schemas["create_agent"]["required"])
	limit := schemas["get_conversations"]["properties"].(map[string]any)["limit"].(map[string]any)
	require.Equal(t, 1.0, limit["minimum"])
	require.Equal(t, 100.0, limit["maximum"])
	require.Equal(t, 20.0, limit["default"])
}

func TestMCPCreatesEveryValidBlueprintAndServesItsTestPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedBlueprintUploads(t)
	s := b.mcp(t, b.url, b.key)
	files, err := filepath.Glob("../testdata/blueprints/valid/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		out := s.ok("create_agent", map[string]any{"yaml": readBlueprint(t, f)})
		require.Equal(t, "enabled", out["status"], f)
		require.NotNil(t, out["warnings"])
		testURL := out["testUrl"].(string)
		require.True(t, strings.HasPrefix(testURL, "http://switchboard.test/agents/"), testURL)
		resp, body := b.do(t, http.MethodGet, strings.TrimPrefix(testURL, "http://switchboard.test"), "", "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "the test link is a route this server serves")
		require.Contains(t, string(body), out["agentName"])
	}
	list := s.ok("list_agents", nil)
	require.Equal(t, float64(len(files)), list["total"])
}

func TestMCPRejectsEveryInvalidBlueprintWithPathAndLine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	files, err := filepath.Glob("../testdata/blueprints/invalid/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		text := readBlueprint(t, f)
		var expect []string
		for _, line := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(line, "# expect: "); ok {
				expect = append(expect, strings.TrimSpace(rest))
			}
		}
		e := s.fails("create_agent", map[string]any{"yaml": text}, "invalid_blueprint")
		var got []string
		for _, item := range e["errors"].([]any) {
			got = append(got, item.(string))
		}
		require.Len(t, got, len(expect), "%s: %v", f, got)
		for i, want := range expect {
			// An error of the document as a whole has no path: "line 16: ...".
			if rest, ok := strings.CutPrefix(want, "("); ok {
				want = strings.TrimSuffix(rest, ")")
			}
			require.True(t, strings.HasPrefix(got[i], want+": "), "%s: want %q, got %q", f, want, got[i])
		}
	}
	require.Zero(t, b.count(t, "agents"), "nothing is written")
}

func TestMCPInboundSeatTransitions(t *testing.T) {
	t.Parallel()
	carrier := smstest.New(t)
	carrier.AddNumber("+14155550100")
	b := setup(t, func(o *setupOpts) { o.smsBaseURL = carrier.URL })
	s := b.mcp(t, b.url, b.key)
	x := s.ok("create_agent", map[string]any{"yaml": agentYAML("Agent X")})["agentId"].(string)
	y := s.ok("create_agent", map[string]any{"yaml": agentYAML("Agent Y")})["agentId"].(string)

	resp, raw := b.do(t, http.MethodPost, "/api/channels", "Bearer "+b.key, `{"provider":"sms","name":"Main line","config":{"phone_number":"+14155550100"}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var ch struct{ ID string }
	require.NoError(t, json.Unmarshal(raw, &ch))

	first := s.ok("deploy_agent", map[string]any{"agent_id": x, "channel_id": ch.ID, "config": map[string]any{"route": "ignored"}})
	require.Equal(t, true, first["inbound"], "an empty seat is taken")
	require.Equal(t, "Main line", first["channelName"])
	require.Nil(t, first["replacedAgentId"])

	second := s.ok("deploy_agent", map[string]any{"agent_id": y, "channel_id": ch.ID})
	require.Equal(t, false, second["inbound"], "a held seat stays: outbound only")
	require.NotEmpty(t, second["note"])

	e := s.fails("deploy_agent", map[string]any{"agent_id": y, "take_over_inbound": true}, "channel_id_required")
	require.Equal(t, "take_over_inbound", e["param"])
	s.fails("deploy_agent", map[string]any{"agent_id": y, "channel": "sms", "take_over_inbound": true}, "channel_id_required")
	// Spec: the legacy `channel` parameter "is rejected when `take_over_inbound` is used",
	// even when it agrees with the channel row.
	e = s.fails("deploy_agent", map[string]any{"agent_id": y, "channel": "sms", "channel_id": ch.ID, "take_over_inbound": true}, "channel_not_allowed")
	require.Equal(t, "channel", e["param"])

	third := s.ok("deploy_agent", map[string]any{"agent_id": y, "channel_id": ch.ID, "take_over_inbound": true})
	require.Equal(t, true, third["inbound"])
	require.Equal(t, x, third["replacedAgentId"])

	_, raw = b.get(t, "/api/channels")
	require.Contains(t, string(raw), `"inbound_agent_id":"`+y+`"`)
	require.Equal(t, []any{"sms"}, s.ok("get_agent", map[string]any{"agent_id": x})["agent"].(map[string]any)["deployments"],
		"the previous holder stays deployed for outbound")

	// The database, not only the code, allows one inbound seat per channel.
	_, err := b.store.Pool().Exec(context.Background(), `UPDATE deployments SET inbound = true WHERE agent_id = $1`, x)
	require.ErrorContains(t, err, "deployments_inbound_seat_idx")
}

func TestMCPDisclosureBlock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	voice := s.ok("create_agent", map[string]any{"yaml": voiceAgent})["agentId"].(string)
	text := s.ok("create_agent", map[string]any{"yaml": agentYAML("Chat only")})["agentId"].(string)

	d := s.ok("get_agent", map[string]any{"agent_id": voice})["disclosure"].(map[string]any)
	require.Equal(t, true, d["enabled"], "new agents default to enabled")
	require.Equal(t, true, d["applies"])
	require.Equal(t, true, d["using_default_text"])
	require.NotEmpty(t, d["spoken_text"], "null text means the default text, not silence")
	require.Equal(t, "spoken_text", d["mode"])
	require.Nil(t, d["recording_id"])

	require.Equal(t, false, s.ok("get_agent", map[string]any{"agent_id": text})["disclosure"].(map[string]any)["applies"], "text-only")

	s.ok("update_agent", map[string]any{"agent_id": voice, "updates": map[string]any{"disclosureText": "You are talking to Ava, an AI."}})
	d = s.ok("get_agent", map[string]any{"agent_id": voice})["disclosure"].(map[string]any)
	require.Equal(t, false, d["using_default_text"])
	require.Equal(t, "You are talking to Ava, an AI.", d["spoken_text"])
	s.ok("update_agent", map[string]any{"agent_id": voice, "updates": map[string]any{"disclosureText": nil}})
	require.Equal(t, true, s.ok("get_agent", map[string]any{"agent_id": voice})["disclosure"].(map[string]any)["using_default_text"])

	ctx := context.Background()
	clip, err := b.store.CreateRecording(ctx, b.workspace.ID, "voicemail_drop", "vm")
	require.NoError(t, err)
	e := s.fails("update_agent", map[string]any{"agent_id": voice, "updates": map[string]any{"disclosureRecordingId": clip.String()}}, "wrong_recording_kind")
	require.Equal(t, "updates.disclosureRecordingId", e["param"])
	ws2, err := b.store.CreateWorkspace(ctx, "other", 1)
	require.NoError(t, err)
	foreign, err := b.store.CreateRecording(ctx, ws2.ID, "disclosure", "theirs")
	require.NoError(t, err)
	s.fails("update_agent", map[string]any{"agent_id": voice, "updates": map[string]any{"disclosureRecordingId": foreign.String()}}, "recording_not_found")
	rec, err := b.store.CreateRecording(ctx, b.workspace.ID, "disclosure", "ours")
	require.NoError(t, err)
	s.ok("update_agent", map[string]any{"agent_id": voice, "updates": map[string]any{"disclosureRecordingId": rec.String()}})
	d = s.ok("get_agent", map[string]any{"agent_id": voice})["disclosure"].(map[string]any)
	require.Equal(t, "recording", d["mode"])
	require.Equal(t, rec.String(), d["recording_id"])

	s.ok("update_agent", map[string]any{"agent_id": voice, "updates": map[string]any{"disclosureEnabled": false}})
	d = s.ok("get_agent", map[string]any{"agent_id": voice})["disclosure"].(map[string]any)
	require.Equal(t, false, d["enabled"])
	require.Equal(t, false, d["applies"], "a voice agent with the safeguard off")
}

func TestMCPUpdateGetListAndDisable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	id := s.ok("create_agent", map[string]any{"yaml": agentYAML("Order Desk")})["agentId"].(string)
	s.ok("create_agent", map[string]any{"yaml": agentYAML("Returns")})

	out := s.ok("update_agent", map[string]any{"agent_id": id, "updates": map[string]any{"tone": "casual", "temperature": 1.1, "labels": []string{"vip"}}})
	require.Equal(t, "Order Desk", out["agentName"])
	agent := s.ok("get_agent", map[string]any{"agent_id": id})["agent"].(map[string]any)
	require.Equal(t, "casual", agent["tone"])
	require.Equal(t, 1.1, agent["temperature"])

	e := s.fails("update_agent", map[string]any{"agent_id": id, "updates": map[string]any{"tone": "grumpy"}}, "invalid_value")
	require.Equal(t, "updates.tone", e["param"])
	require.Contains(t, e["message"], "friendly")
	s.fails("update_agent", map[string]any{"agent_id": id, "updates": map[string]any{"llmModel": "gamma-v4-pro"}}, "invalid_value")
	e = s.fails("update_agent", map[string]any{"agent_id": id, "updates": map[string]any{"colour": "red"}}, "unknown_field")
	require.Equal(t, "updates.colour", e["param"])
	s.fails("get_agent", map[string]any{}, "missing_parameter")

	found := s.ok("get_agent", map[string]any{"name": "order DESK"})
	require.Equal(t, 1.0, found["total"], "name search ignores case")
	require.NotNil(t, found["agents"].([]any)[0].(map[string]any)["disclosure"], "each agent carries its disclosure")

	s.ok("update_agent", map[string]any{"agent_id": id, "updates": map[string]any{"status": "disabled"}})
	require.Equal(t, 1.0, s.ok("list_agents", map[string]any{"status": "disabled"})["total"])
	require.Equal(t, 1.0, s.ok("list_agents", map[string]any{"status": "enabled"})["total"])
	s.fails("deploy_agent", map[string]any{"agent_id": id, "channel": "webchat"}, "agent_disabled")
	s.fails("list_agents", map[string]any{"status": "paused"}, "invalid_value")
	s.fails("list_agents", map[string]any{"bogus": 1}, "invalid_arguments")
}

func TestMCPIsScopedToTheCallersWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mine := b.mcp(t, b.url, b.key)
	id := mine.ok("create_agent", map[string]any{"yaml": agentYAML("Private")})["agentId"].(string)
	ws2, err := b.store.CreateWorkspace(context.Background(), "rival", 1_000_000_000)
	require.NoError(t, err)
	theirs := b.mcp(t, b.url, b.newKey(t, ws2, "owner"))
	for _, tool := range []string{"get_agent", "delete_agent", "generate_test_link", "get_analytics", "get_conversations"} {
		theirs.fails(tool, map[string]any{"agent_id": id}, "agent_not_found")
	}
	theirs.fails("update_agent", map[string]any{"agent_id": id, "updates": map[string]any{"name": "Mine now"}}, "agent_not_found")
	theirs.fails("deploy_agent", map[string]any{"agent_id": id, "channel": "webchat"}, "agent_not_found")
	require.Equal(t, 0.0, theirs.ok("list_agents", nil)["total"])
	require.Equal(t, 0.0, theirs.ok("get_agent", map[string]any{"name": "Private"})["total"])
	require.Equal(t, "Private", mine.ok("get_agent", map[string]any{"agent_id": id})["agent"].(map[string]any)["name"])

	c, err := mcpclient.NewStreamableHttpClient(b.url+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer sk-svc_" + strings.Repeat("z", 43)}))
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	defer func() { _ = c.Close() }()
	_, err = c.Initialize(context.Background(), mcp.InitializeRequest{})
	require.Error(t, err, "an unknown key is refused at the door")
}

func TestMCPTestLinkDeleteCascadeAndAnalytics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	id := s.ok("create_agent", map[string]any{"yaml": agentYAML("Widget")})["agentId"].(string)
	link := s.ok("generate_test_link", map[string]any{"agent_id": id})
	require.Nil(t, link["embedUrl"], "no webchat deployment yet")
	require.Equal(t, "Widget", link["agentName"])

	dep := s.ok("deploy_agent", map[string]any{"agent_id": id, "channel": "webchat"})
	require.Equal(t, "webchat", dep["channel"])
	embed := s.ok("generate_test_link", map[string]any{"agent_id": id})["embedUrl"].(string)
	resp, js := b.do(t, http.MethodGet, strings.TrimPrefix(embed, "http://switchboard.test"), "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "the embed URL is served")
	require.Contains(t, string(js), dep["deploymentId"].(string), "the webchat loader of the deployment")

	agentID := mustUUID(t, id)
	for _, labels := range [][]string{{"sales"}, {"sales", "vip"}, nil} {
		_, err := b.store.CreateAgentConversation(context.Background(), b.workspace.ID, agentID, "webchat", labels)
		require.NoError(t, err)
	}
	stats := s.ok("get_analytics", map[string]any{"agent_id": id})
	require.Equal(t, 3.0, stats["totalConversations"])
	require.Equal(t, map[string]any{"sales": 2.0, "vip": 1.0}, stats["labelCounts"])
	convs := s.ok("get_conversations", map[string]any{"agent_id": id, "limit": 2})
	require.Equal(t, 3.0, convs["total"])
	require.Len(t, convs["conversations"], 2)
	s.fails("get_conversations", map[string]any{"agent_id": id, "limit": 101}, "invalid_value")

	s.ok("crawl_website", map[string]any{"agent_id": id, "url": "https://93.184.216.34/docs", "depth": 1})
	deleted := s.ok("delete_agent", map[string]any{"agent_id": id})
	require.Equal(t, "Widget", deleted["agentName"])
	for _, table := range []string{"agents", "deployments", "knowledge_bases", "knowledge_sources", "conversations"} {
		require.Zero(t, b.count(t, table), table)
	}
	s.fails("get_agent", map[string]any{"agent_id": id}, "agent_not_found")
}

func TestMCPCrawlsASiteIntoTheKnowledgeBase(t *testing.T) {
	t.Parallel()
	b := setup(t) // WEBHOOK_ALLOW_PRIVATE lets the crawl reach the local site
	site := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><head><title>Clinic</title></head><body>" + body + "</body></html>"))
		}
	}
	site.HandleFunc("/", page(`<p>Welcome to the clinic.</p><a href="/hours">Hours</a>`))
	site.HandleFunc("/hours", page(`<p>We open at nine.</p><a href="/hours/holidays">Holidays</a>`))
	site.HandleFunc("/hours/holidays", page(`<p>Closed on the first of January for fluoride maintenance.</p><a href="/hours/holidays/deep">More</a>`))
	site.HandleFunc("/hours/holidays/deep", page(`<p>Level four: never fetched at depth three.</p>`))
	srv := httptest.NewServer(site)
	defer srv.Close()

	s := b.mcp(t, b.url, b.key)
	id := s.ok("create_agent", map[string]any{"yaml": agentYAML("Clinic")})["agentId"].(string)
	out := s.ok("crawl_website", map[string]any{"agent_id": id, "url": srv.URL + "/", "depth": 3})
	require.Equal(t, "queued", out["status"])
	require.NotEmpty(t, out["knowledgeBaseId"])
	var source map[string]any
	require.Eventually(t, func() bool {
		sources := s.ok("get_agent", map[string]any{"agent_id": id})["agent"].(map[string]any)["knowledgeSources"].([]any)
		source = sources[0].(map[string]any)
		return source["status"] == "ready" || source["status"] == "failed"
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, "ready", source["status"], "%v", source)
	require.Equal(t, 3.0, source["pages"])

	chunks, err := b.store.SearchKnowledge(context.Background(), b.workspace.ID, mustUUID(t, id), "fluoride", 5)
	require.NoError(t, err)
	require.Len(t, chunks, 1)
	require.Contains(t, chunks[0].URL, "/hours/holidays")
	none, err := b.store.SearchKnowledge(context.Background(), b.workspace.ID, mustUUID(t, id), "never fetched", 5)
	require.NoError(t, err)
	require.Empty(t, none)

	s.fails("crawl_website", map[string]any{"agent_id": id, "url": srv.URL, "depth": 6}, "invalid_value")
}

func TestMCPCrawlRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.allowPrivate = false })
	s := b.mcp(t, b.url, b.key)
	id := s.ok("create_agent", map[string]any{"yaml": agentYAML("Careful")})["agentId"].(string)
	for _, url := range []string{"http://example.com/", "https://127.0.0.1/", "https://169.254.169.254/latest/meta-data"} {
		e := s.fails("crawl_website", map[string]any{"agent_id": id, "url": url}, "url_not_allowed")
		require.Equal(t, "url", e["param"])
	}
}

func TestDevelopmentServesUnauthenticatedCallsAsTheDevelopmentUser(t *testing.T) {
	t.Parallel()
	dev := setup(t, func(o *setupOpts) { o.development = true })
	s := dev.mcp(t, dev.url, "")
	s.ok("create_agent", map[string]any{"yaml": agentYAML("Dev agent")})
	resp, raw := dev.do(t, http.MethodGet, "/api/agents", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), "Dev agent")
	resp, raw = dev.do(t, http.MethodGet, "/v1/models", "", "")
	errorOf(t, resp, raw, http.StatusUnauthorized) // /v1 always needs a key

	prod := setup(t)
	resp, raw = prod.do(t, http.MethodGet, "/api/agents", "", "")
	errorOf(t, resp, raw, http.StatusUnauthorized)
	c, err := mcpclient.NewStreamableHttpClient(prod.url + "/mcp")
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	defer func() { _ = c.Close() }()
	_, err = c.Initialize(context.Background(), mcp.InitializeRequest{})
	require.Error(t, err, "never in production")
}
