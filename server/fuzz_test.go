package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/gen/apiapi"
	"switchboard/gen/v1api"
	"switchboard/openapi"
	"switchboard/openapi/contract"
	"switchboard/sms/smstest"
)

// fuzzOp is a request of one operation: the fuzzer picks one by index and mutates its path
// id, its query string and its body. `$response`, `$conversation`, `$webhook`, `$agent` and
// `$event` (and `$upload`) in the id or the body stand for resources the fuzzed server holds.
type fuzzOp struct {
	operationID string
	method      string
	path        string // `{id}` is replaced by the (escaped) id
	contentType string
	id, query   string
	body        string
}

// fuzzOps are valid requests of every /v1 and /api operation (TestFuzzOpsCoverEveryOperation
// keeps the list complete): the seed corpus of FuzzHTTP.
var fuzzOps = []fuzzOp{
	{"createResponse", http.MethodPost, "/v1/responses", "application/json", "", "", `{"model":"beta-5.4","input":"Hello"}`},
	{"createResponse", http.MethodPost, "/v1/responses", "application/json", "", "", `{"input":[{"role":"user","content":[{"type":"input_text","text":"Hi"}]}],"previous_response_id":"$response","stream":true}`},
	{"createResponse", http.MethodPost, "/v1/responses", "application/json", "", "", `{"input":"Later","background":true,"instructions":"Be brief."}`},
	{"getResponse", http.MethodGet, "/v1/responses/{id}", "", "$response", "", ""},
	{"createChatCompletion", http.MethodPost, "/v1/chat/completions", "application/json", "", "", `{"model":"alpha-sonnet-4-6","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]}`},
	{"createChatCompletion", http.MethodPost, "/v1/chat/completions", "application/json", "", "", `{"messages":[{"role":"user","content":"again"}],"conversation":"$conversation","stream":true}`},
	{"listModels", http.MethodGet, "/v1/models", "", "", "", ""},
	{"retrieveModel", http.MethodGet, "/v1/models/{id}", "", "gamma-v4-flash", "", ""},
	{"createWebhook", http.MethodPost, "/v1/webhooks", "application/json", "", "", `{"url":"https://hooks.example.com/in","event_types":["turn.completed"],"description":"night shift"}`},
	{"listWebhooks", http.MethodGet, "/v1/webhooks", "", "", "limit=10", ""},
	{"getWebhook", http.MethodGet, "/v1/webhooks/{id}", "", "$webhook", "", ""},
	{"updateWebhook", http.MethodPatch, "/v1/webhooks/{id}", "application/json", "$webhook", "", `{"description":"day shift","enabled":true,"event_types":["*"]}`},
	{"deleteWebhook", http.MethodDelete, "/v1/webhooks/{id}", "", "$webhook2", "", ""},
	{"listWebhookAttempts", http.MethodGet, "/v1/webhooks/{id}/attempts", "", "$webhook", "limit=5", ""},
	{"redeliverWebhookEvent", http.MethodPost, "/v1/webhooks/{id}/redeliver", "application/json", "$webhook", "", `{"event_id":"$event"}`},
	{"streamEvents", http.MethodGet, "/v1/events", "", "", "after=0&types=turn.completed", ""},
	{"listAgents", http.MethodGet, "/api/agents", "", "", "status=enabled", ""},
	{"createAgent", http.MethodPost, "/api/agents", "application/yaml", "", "", fuzzAgentYAML},
	{"createAgent", http.MethodPost, "/api/agents", "application/json", "", "", `{"yaml":"agent:\n  name: Desk\n  language: en\n  persona:\n    display_name: Helper\n    tone: professional\n    greeting: Hi there.\n  llm:\n    provider: beta\n    model: beta-5.4-mini\n    temperature: 0.5\n    max_tokens: 256\n    system_prompt: You help customers.\n"}`},
	{"getAgent", http.MethodGet, "/api/agents/{id}", "", "$agent", "", ""},
	{"agentChat", http.MethodPost, "/api/agents/{id}/chat", "application/json", "$agent", "", `{"message":"When do you open?","contact":{"name":"Ada","email":"ada@example.com"}}`},
	{"agentChat", http.MethodPost, "/api/agents/{id}/chat", "application/json", "$agent", "", `{"message":"And tomorrow?","stream":true}`},
	{"listDeployments", http.MethodGet, "/api/agents/{id}/deployments", "", "$agent", "", ""},
	{"deployAgent", http.MethodPost, "/api/agents/{id}/deployments", "application/json", "$agent", "", `{"channel":"webchat","config":{"allowed_origins":["https://shop.example"]}}`},
	{"generateTestLink", http.MethodPost, "/api/agents/{id}/test-link", "", "$agent", "", ""},
	{"undeployAgent", http.MethodDelete, "/api/agents/$agent/deployments/{id}", "", "$deployment", "", ""},
	{"updateAgent", http.MethodPatch, "/api/agents/{id}", "application/json", "$agent", "", `{"greeting":"Good morning!","status":"disabled","disclosureText":null}`},
	{"listChannels", http.MethodGet, "/api/channels", "", "", "", ""},
	{"createChannel", http.MethodPost, "/api/channels", "application/json", "", "", `{"provider":"sms","name":"Main line","config":{"phone_number":"+1 415 555 0188"}}`},
	{"getChannel", http.MethodGet, "/api/channels/{id}", "", "$channel", "", ""},
	{"updateChannel", http.MethodPatch, "/api/channels/{id}", "application/json", "$channel", "", `{"name":"Front desk","config":{"help_text":"Call us at +1 415 555 0100."}}`},
	{"deleteChannel", http.MethodDelete, "/api/channels/{id}", "", "$doomedchannel", "", ""},
	{"chat", http.MethodPost, "/api/chat", "application/json", "", "", `{"message":"List my agents","model":"beta-5.4"}`},
	{"chat", http.MethodPost, "/api/chat", "application/json", "", "", `{"message":"YES 123456","conversation_id":"$conversation","stream":true}`},
	{"listKeys", http.MethodGet, "/api/keys", "", "", "", ""},
	{"createKey", http.MethodPost, "/api/keys", "application/json", "", "", `{"role":"viewer"}`},
	{"revokeKey", http.MethodDelete, "/api/keys/{id}", "", "$revocable", "", ""},
	{"createUpload", http.MethodPost, "/api/uploads", "text/markdown", "", "filename=kb/faq.md", "# FAQ\n\nWe open at **nine**."},
	{"getUpload", http.MethodGet, "/api/uploads/{id}", "", "$upload", "", ""},
	{"blockVisitor", http.MethodPost, "/api/webchat/blocked-visitors", "application/json", "", "", `{"visitor_id":"$visitor","reason":"Spam links"}`},
	{"listBlockedVisitors", http.MethodGet, "/api/webchat/blocked-visitors", "", "", "", ""},
	{"unblockVisitor", http.MethodDelete, "/api/webchat/blocked-visitors/{id}", "", "$visitor2", "", ""},
	{"listContacts", http.MethodGet, "/api/contacts", "", "", "tag=vip&consent_sms=true&q=ada&limit=10", ""},
	{"createContact", http.MethodPost, "/api/contacts", "application/json", "", "", `{"name":"Ada","phone":"+14155550188","email":"ada@example.com","tags":["vip"],"lists":["Newsletter"],"consent_sms":true}`},
	{"importContacts", http.MethodPost, "/api/contacts/import", "multipart/form-data; boundary=fuzzb", "", "",
		"--fuzzb\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.csv\"\r\nContent-Type: text/csv\r\n\r\nname,phone,tags,consent_sms\nBob,+14155550177,vip;gold,yes\n\r\n--fuzzb--\r\n"},
	{"getContact", http.MethodGet, "/api/contacts/{id}", "", "$contact", "", ""},
	{"listRecordings", http.MethodGet, "/api/recordings", "", "", "", ""},
	{"createRecording", http.MethodPost, "/api/recordings", "multipart/form-data; boundary=rb", "", "", recordingProbeBody},
	{"getRecording", http.MethodGet, "/api/recordings/{id}", "", "$recording", "", ""},
	{"deleteRecording", http.MethodDelete, "/api/recordings/{id}", "", "$recording", "", ""},
	{"updateContact", http.MethodPatch, "/api/contacts/{id}", "application/json", "$contact", "", `{"tags":["vip","gold"],"email":null,"consent_calls":true}`},
	{"deleteContact", http.MethodDelete, "/api/contacts/{id}", "", "$doomedContact", "", ""},
	// issue 48: the audit log, erasure, retention
	{"listAuditLog", http.MethodGet, "/api/audit-log", "", "", "action=agent.created&actor=key&since=2026-01-01T00:00:00Z&limit=5", ""},
	{"eraseContact", http.MethodPost, "/api/contacts/{id}/erase", "", "$doomedContact", "", ""},
	{"getRetention", http.MethodGet, "/api/retention", "", "", "", ""},
	{"setRetention", http.MethodPut, "/api/retention", "application/json", "", "", `{"retention_days":30}`},
	{"restoreContact", http.MethodPost, "/api/contacts/{id}/restore", "", "$deletedContact", "", ""},
	{"listContactLists", http.MethodGet, "/api/contact-lists", "", "", "", ""},
	{"listCampaigns", http.MethodGet, "/api/campaigns", "", "", "status=draft", ""},
	{"createCampaign", http.MethodPost, "/api/campaigns", "application/json", "", "", `{"name":"Spring","draft":true,"audience":{"tags":["vip"]},"template":{"name":"spring_sale","language":"en_US","parameters":["{{contact.first_name|there}}"]},"schedule":{"window_start":"09:00","window_end":"17:00","timezone":"America/New_York","rate_per_minute":5}}`},
	{"getCampaign", http.MethodGet, "/api/campaigns/{id}", "", "$campaign", "", ""},
	{"updateCampaign", http.MethodPatch, "/api/campaigns/{id}", "application/json", "$campaign", "", `{"name":"Summer","first_message":"Hello!","audience":{"tags":["gold"]}}`},
	{"startCampaign", http.MethodPost, "/api/campaigns/{id}/start", "", "$startable", "", ""},
	{"pauseCampaign", http.MethodPost, "/api/campaigns/{id}/pause", "", "$scheduled", "", ""},
	{"cancelCampaign", http.MethodPost, "/api/campaigns/{id}/cancel", "", "$cancellable", "", ""},
	{"listPhoneNumbers", http.MethodGet, "/api/phone-numbers", "", "", "status=active", ""},
	{"searchPhoneNumbers", http.MethodGet, "/api/phone-numbers/available", "", "", "country=US&area_code=212", ""},
	{"buyPhoneNumber", http.MethodPost, "/api/phone-numbers", "application/json", "", "", `{"phone_number":"+12125550102","country":"US","confirm_price":115}`},
	{"releasePhoneNumber", http.MethodDelete, "/api/phone-numbers/{id}", "", "$phone", "", ""},
	{"runBulkTool", http.MethodPost, "/api/bulk/{id}", "application/json", "cancel_campaigns", "", `{"filter":{"status":"paused"}}`},
	{"runBulkTool", http.MethodPost, "/api/bulk/{id}", "application/json", "delete_contacts", "", `{"filter":{"tag":"gold"}}`},
	{"getBulkRun", http.MethodGet, "/api/bulk/runs/{id}", "", "$bulkRun", "", ""},
	{"confirmAction", http.MethodPost, "/api/actions/{id}/confirm", "application/json", "$bulkAction", "", `{"code":"$bulkCode"}`},
	{"listConfirmations", http.MethodGet, "/api/confirmations", "", "", "", ""},
	{"confirmPendingAction", http.MethodPost, "/api/confirmations/{id}", "application/json", "$buyAction", "", `{"code":"$buyCode"}`},
	{"listConversations", http.MethodGet, "/api/conversations", "", "", "status=open&assignee=none&limit=5", ""},
	{"getConversation", http.MethodGet, "/api/conversations/{id}", "", "$visitor", "", ""},
	{"assignConversation", http.MethodPost, "/api/conversations/{id}/assign", "application/json", "$visitor", "", `{"user_id":"$member"}`},
	{"replyToConversation", http.MethodPost, "/api/conversations/{id}/messages", "application/json", "$held", "", `{"text":"Hello from the team"}`},
	{"addConversationNote", http.MethodPost, "/api/conversations/{id}/notes", "application/json", "$visitor", "", `{"text":"Called back"}`},
	{"releaseConversation", http.MethodPost, "/api/conversations/{id}/release", "", "$released", "", ""},
	{"closeConversation", http.MethodPost, "/api/conversations/{id}/close", "", "$visitor2", "", ""},
	{"getInboxSettings", http.MethodGet, "/api/inbox/settings", "", "", "", ""},
	{"updateInboxSettings", http.MethodPatch, "/api/inbox/settings", "application/json", "", "", `{"notify_after_seconds":300}`},
	{"updateMyInboxPreferences", http.MethodPatch, "/api/inbox/me", "application/json", "", "", `{"name":"Ann","notify_unclaimed":true}`},
	// Workflows (issue 45).
	{"listWorkflows", http.MethodGet, "/api/workflows", "", "", "", ""},
	{"createWorkflow", http.MethodPost, "/api/workflows", "application/json", "", "", `{"document":"name: Fuzzed\ntrigger: {type: event, event: turn.completed, condition: 'has(event.data.model)'}\nsteps:\n  - {id: w, type: wait, duration: 1m}\n  - {id: t, type: if, condition: 'input.n > 1'}\n"}`},
	{"getWorkflow", http.MethodGet, "/api/workflows/{id}", "", "$workflow", "", ""},
	{"updateWorkflow", http.MethodPatch, "/api/workflows/{id}", "application/json", "$workflow", "", `{"enabled":false}`},
	{"deleteWorkflow", http.MethodDelete, "/api/workflows/{id}", "", "$doomedworkflow", "", ""},
	{"listWorkflowRuns", http.MethodGet, "/api/workflows/{id}/runs", "", "$workflow", "", ""},
	{"startWorkflowRun", http.MethodPost, "/api/workflows/{id}/runs", "application/json", "$workflow", "", `{"input":{"n":2,"who":"Ada"}}`},
	{"getWorkflowRun", http.MethodGet, "/api/runs/{id}", "", "$run", "", ""},
	{"cancelWorkflowRun", http.MethodPost, "/api/runs/{id}/cancel", "", "$run", "", ""},
}

// fuzzAgentYAML is a valid blueprint (voiceAgent of the MCP tests, with a webchat channel).
const fuzzAgentYAML = `agent:
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
    - type: webchat
`

// FuzzHTTP drives the real server in process (real PostgreSQL, vendors faked at the wire)
// with mutated requests of every /v1 and /api operation: no request may end in a 5xx or
// break the contract (every response is checked against the OpenAPI documents) and, while
// fuzzing, none may take over a second. `go test` runs the seeds and testdata/fuzz/FuzzHTTP;
// to fuzz:
//
//	scripts/with-test-db.sh go test -run '^$' -fuzz FuzzHTTP -fuzztime 5m ./server/
func FuzzHTTP(f *testing.F) {
	for i, op := range fuzzOps {
		f.Add(uint8(i), op.id, op.query, []byte(op.body))
	}
	provider := smstest.New(f)
	b := setup(f, func(o *setupOpts) { o.keyRPM, o.workspaceRPM, o.smsBaseURL = 1<<30, 1<<30, provider.URL })
	ctx := context.Background()
	_, err := b.store.Pool().Exec(ctx, `UPDATE workspaces SET balance_nano_usd = 1000000000000000 WHERE id = $1`, b.workspace.ID)
	require.NoError(f, err)
	auth := "Bearer " + b.newKey(f, b.workspace, "owner")
	refs := fuzzRefs(f, b, auth)
	// Creating keys and a person's inbox preferences need a dashboard session: those
	// operations are sent with an owner's cookie.
	base, err := url.Parse(b.url)
	require.NoError(f, err)
	session := b.signedIn(f, "owner").client.Jar.Cookies(base)
	// The 1 s bound is an oracle for the fuzzer; the seed run `go test` makes on a busy
	// machine asserts no timing.
	timed := flag.Lookup("test.fuzz").Value.String() != ""
	v1, api := contract.Load(f, openapi.V1YAML), contract.Load(f, openapi.APIYAML)

	send := func(t testing.TB, op fuzzOp, id, query string, body []byte) (status int, elapsed time.Duration, answer string, ok bool) {
		target := b.url + strings.ReplaceAll(refs.Replace(op.path), "{id}", url.PathEscape(refs.Replace(id)))
		if query != "" {
			target += "?" + sendable(query)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var r io.Reader
		if op.method != http.MethodGet && op.method != http.MethodDelete {
			r = bytes.NewReader([]byte(refs.Replace(string(body))))
		}
		req, err := http.NewRequestWithContext(ctx, op.method, target, r)
		if err != nil {
			return 0, 0, "", false // not a URL a client could send
		}
		if op.operationID == "createKey" || op.operationID == "updateMyInboxPreferences" {
			for _, c := range session {
				req.AddCookie(c)
			}
		} else {
			req.Header.Set("Authorization", auth)
		}
		if op.contentType != "" {
			req.Header.Set("Content-Type", op.contentType)
		}
		start := time.Now()
		resp, err := contract.Client(t, v1, api).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		// The whole answer, streamed turns included; the event feed stays open, so there the
		// headers are the answer.
		var raw []byte
		if mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mediaType != "text/event-stream" || op.operationID != "streamEvents" {
			raw, err = io.ReadAll(resp.Body)
			require.NoError(t, err)
		}
		return resp.StatusCode, time.Since(start), string(raw), true
	}
	// The seeds are valid requests: each succeeds, so the fuzzer starts from every
	// operation's success path.
	for _, op := range fuzzOps {
		status, _, answer, _ := send(f, op, op.id, op.query, []byte(op.body))
		require.Less(f, status, 300, "%s %s: %s", op.method, op.path, answer)
	}

	f.Fuzz(func(t *testing.T, opIndex uint8, id, query string, body []byte) {
		op := fuzzOps[int(opIndex)%len(fuzzOps)]
		status, elapsed, answer, ok := send(t, op, id, query, body)
		if !ok {
			return
		}
		require.Less(t, status, 500, "%s %s %q %q %q: %s", op.method, op.path, id, query, body, answer)
		if timed && elapsed > time.Second {
			// The machine may have stalled (other processes share it): the input is slow
			// when it is slow twice.
			if _, again, _, _ := send(t, op, id, query, body); again > time.Second {
				t.Fatalf("%s %s %q %q %q took %s, then %s", op.method, op.path, id, query, body, elapsed, again)
			}
		}
	})
}

// sendable escapes what a request line cannot carry raw: spaces, control characters,
// non-ASCII bytes and `#` (clients escape those; sent raw, net/http's server refuses the
// request line before any handler, with a plain-text 400).
func sendable(query string) string {
	var b strings.Builder
	for _, c := range []byte(query) {
		if c <= ' ' || c >= 0x7f || c == '#' {
			b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c)|0x100, 16)[1:]))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// fuzzRefs creates one resource of each kind and returns the replacer of their `$` names.
func fuzzRefs(t testing.TB, b *testBundle, auth string) *strings.Replacer {
	t.Helper()
	decode := func(method, path, contentType, body string, into any) {
		req, err := http.NewRequest(method, b.url+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw := readAll(t, resp)
		require.Less(t, resp.StatusCode, 300, string(raw))
		require.NoError(t, json.Unmarshal(raw, into))
	}
	var response struct {
		ID           string `json:"id"`
		Conversation string `json:"x_svc_conversation"`
	}
	decode(http.MethodPost, "/v1/responses", "application/json", `{"input":"Hello"}`, &response)
	var webhook struct{ ID string }
	decode(http.MethodPost, "/v1/webhooks", "application/json", `{"url":"https://hooks.example.com/in"}`, &webhook)
	var doomed struct{ ID string }
	decode(http.MethodPost, "/v1/webhooks", "application/json", `{"url":"https://hooks.example.com/doomed"}`, &doomed)
	var agent struct{ AgentID string }
	decode(http.MethodPost, "/api/agents", "application/yaml", fuzzAgentYAML, &agent)
	var deployment struct{ DeploymentID string }
	decode(http.MethodPost, "/api/agents/"+agent.AgentID+"/deployments", "application/json", `{"channel":"webchat"}`, &deployment)
	// Keys are created through a session; the fuzzed key to revoke is made in the store.
	_, sum, display := apikey.New()
	k, err := b.store.CreateKey(context.Background(), b.workspace.ID, "member", sum, display)
	require.NoError(t, err)
	revocable := struct{ ID string }{k.ID.String()}
	var upload struct{ ID string }
	decode(http.MethodPost, "/api/uploads?filename=notes.txt", "text/plain", "Parking is free after six.", &upload)
	var recording struct{ ID string }
	decode(http.MethodPost, "/api/recordings", "multipart/form-data; boundary=rb", recordingProbeBody, &recording)
	var event string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT short_id FROM events WHERE workspace_id = $1 ORDER BY seq LIMIT 1`, b.workspace.ID).Scan(&event))
	// Two webchat visitors (their conversations), the second one blocked already.
	var visitors [2]string
	for i := range visitors {
		visitors[i] = fmt.Sprintf("mc-fuzzvisitor%d", i)
		_, err := b.store.Pool().Exec(context.Background(), `INSERT INTO conversations (workspace_id, short_id, channel) VALUES ($1, $2, 'webchat')`, b.workspace.ID, visitors[i])
		require.NoError(t, err)
	}
	_, _, err = b.store.BlockWebchatVisitor(context.Background(), b.workspace.ID, visitors[1], "")
	require.NoError(t, err)
	// The team inbox: a member, a conversation she holds, and one of an agent to hand back.
	member := b.newUser(t, b.workspace, "fuzz.member@example.com", "member")
	for _, ref := range []string{"mc-fuzzheld", "mc-fuzzreleased"} {
		_, err := b.store.Pool().Exec(context.Background(), `INSERT INTO conversations (workspace_id, short_id, channel, status, agent_id, assignee_user_id)
			VALUES ($1, $2, 'webchat', 'escalated', $3, $4)`, b.workspace.ID, ref, agent.AgentID, member.ID)
		require.NoError(t, err)
	}
	camp := campaignRefs(t, b, auth, decode)
	var channel, doomedChannel struct{ ID string }
	decode(http.MethodPost, "/api/channels", "application/json", `{"provider":"sms","name":"Fuzzed","config":{"phone_number":"+14155550177"}}`, &channel)
	decode(http.MethodPost, "/api/channels", "application/json", `{"provider":"webchat","name":"Doomed"}`, &doomedChannel)
	camp = append(camp, "$doomedchannel", doomedChannel.ID, "$channel", channel.ID)
	var workflow, doomedWorkflow, run struct{ ID string }
	decode(http.MethodPost, "/api/workflows", "application/json", `{"document":"name: Seeded\ntrigger: {type: manual}\nsteps: [{id: w, type: wait, duration: 1h}]\n"}`, &workflow)
	decode(http.MethodPost, "/api/workflows", "application/json", `{"document":"name: Doomed\ntrigger: {type: manual}\nsteps: [{id: w, type: wait, duration: 1h}]\n"}`, &doomedWorkflow)
	decode(http.MethodPost, "/api/workflows/"+workflow.ID+"/runs", "application/json", `{}`, &run)
	camp = append(camp, "$doomedworkflow", doomedWorkflow.ID, "$workflow", workflow.ID, "$run", run.ID)
	camp = append(camp, "$deployment", deployment.DeploymentID, "$member", member.ID.String(), "$held", "mc-fuzzheld", "$released", "mc-fuzzreleased")
	return strings.NewReplacer(append([]string{"$visitor2", visitors[1], "$visitor", visitors[0], "$response", response.ID, "$conversation", response.Conversation, "$webhook2", doomed.ID, "$webhook", webhook.ID, "$agent", agent.AgentID, "$event", event, "$revocable", revocable.ID, "$upload", upload.ID, "$recording", recording.ID}, camp...)...)
}

// The seed corpus of FuzzHTTP has a valid request of every operation of both contracts.
func TestFuzzOpsCoverEveryOperation(t *testing.T) {
	t.Parallel()
	var want []string
	for _, load := range []func() (*openapi3.T, error){v1Spec, apiSpec} {
		spec, err := load()
		require.NoError(t, err)
		for _, item := range spec.Paths.Map() {
			for _, op := range item.Operations() {
				// The generated copy of the document capitalizes operation ids.
				want = append(want, strings.ToLower(op.OperationID[:1])+op.OperationID[1:])
			}
		}
	}
	seen := map[string]bool{}
	var have []string
	for _, op := range fuzzOps {
		if !seen[op.operationID] {
			seen[op.operationID] = true
			have = append(have, op.operationID)
		}
	}
	sort.Strings(want)
	sort.Strings(have)
	require.Equal(t, want, have)
}

func v1Spec() (*openapi3.T, error)  { return v1api.GetSwagger() }
func apiSpec() (*openapi3.T, error) { return apiapi.GetSwagger() }
