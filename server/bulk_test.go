package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/store"
)

// seedConversations adds n conversations of a channel to the bundle's workspace and returns
// their ids (UUIDs).
func (b *testBundle) seedConversations(t *testing.T, n int, channel string) []string {
	t.Helper()
	rows, err := b.store.Pool().Query(context.Background(),
		`INSERT INTO conversations (workspace_id, short_id, channel)
		 SELECT $1, 'mc-' || md5(random()::text || g::text), $2 FROM generate_series(1, $3) g RETURNING id::text`,
		b.workspace.ID, channel, n)
	require.NoError(t, err)
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

func (b *testBundle) countWhere(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func (b *testBundle) conversationsOn(t *testing.T, channel string) int {
	return b.countWhere(t, `SELECT count(*) FROM conversations WHERE workspace_id = $1 AND channel = $2`, b.workspace.ID, channel)
}

// resolutions are the resolutions of the workspace's confirmation.resolved events for an
// action, in order.
func (b *testBundle) resolutions(t *testing.T, actionID string) []string {
	t.Helper()
	rows, err := b.store.Pool().Query(context.Background(),
		`SELECT envelope FROM events WHERE workspace_id = $1 AND type = 'confirmation.resolved' ORDER BY seq`, b.workspace.ID)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var raw string
		require.NoError(t, rows.Scan(&raw))
		var env struct {
			Data map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(raw), &env))
		if env.Data["action_id"] == actionID {
			out = append(out, env.Data["resolution"].(string))
			require.NotContains(t, env.Data, "conversation_id", "an MCP action has no conversation")
		}
	}
	return out
}

// parked calls a destructive bulk tool, checks that it parked, and returns its answer.
func (s *mcpSession) parked(name string, args map[string]any) map[string]any {
	s.t.Helper()
	out := s.ok(name, args)
	require.Equal(s.t, "awaiting_confirmation", out["status"], "%s parks: %v", name, out)
	require.NotEmpty(s.t, out["action_id"])
	require.Regexp(s.t, `^[0-9]{6}$`, out["code"])
	return out
}

func (s *mcpSession) confirm(p map[string]any) map[string]any {
	s.t.Helper()
	out := s.ok("confirm_action", map[string]any{"action_id": p["action_id"], "code": p["code"]})
	require.Equal(s.t, "completed", out["status"], "%v", out)
	return out
}

// bulkTools are the bulk tools (get_bulk_run and confirm_action beside them).
var bulkTools = []string{"delete_conversations", "delete_channels", "delete_contacts", "delete_campaigns", "undeploy_agents", "cancel_campaigns"}

func TestMCPListsTheBulkToolsAndConfirmAction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	res, err := s.c.ListTools(context.Background(), mcpgo.ListToolsRequest{})
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if strings.HasPrefix(tool.Name, "delete_") || tool.Name == "undeploy_agents" || tool.Name == "cancel_campaigns" {
			if tool.Name != "delete_agent" {
				require.Contains(t, tool.Description, "Role needed: admin", tool.Name)
			}
		}
	}
	for _, want := range append(bulkTools, "get_bulk_run", "confirm_action") {
		require.Contains(t, names, want)
	}
}

func TestMCPDeleteConversationsByFilterAndByIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	b.seedConversations(t, 7, "sms")
	kept := b.seedConversations(t, 3, "webchat")

	p := s.parked("delete_conversations", map[string]any{"filter": map[string]any{"channel": "sms"}})
	require.Equal(t, 7.0, p["requested"])
	require.Len(t, p["sample"], 5, "a sample of five named items")
	require.Contains(t, p["summary"], "Delete 7 conversations (channel sms)")
	require.Contains(t, p["summary"], "and 2 more")
	require.Equal(t, 7, b.conversationsOn(t, "sms"), "parked, nothing deleted yet")
	done := s.confirm(p)
	require.Equal(t, 7.0, done["affected"])
	require.Equal(t, 7.0, done["requested"])
	require.Equal(t, 0, b.conversationsOn(t, "sms"))
	require.Equal(t, 3, b.conversationsOn(t, "webchat"))
	require.Equal(t, []string{"approved"}, b.resolutions(t, p["action_id"].(string)))

	again := s.fails("confirm_action", map[string]any{"action_id": p["action_id"], "code": p["code"]}, "action_resolved")
	require.Contains(t, again["message"], "already approved")

	// ids: a UUID, an mc- id, and one matching nothing.
	var short string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT short_id FROM conversations WHERE id = $1`, kept[1]).Scan(&short))
	p = s.parked("delete_conversations", map[string]any{"ids": []string{kept[0], short, uuid.NewString()}})
	require.Equal(t, 3.0, p["requested"])
	done = s.confirm(p)
	require.Equal(t, 2.0, done["affected"])
	require.Equal(t, []any{map[string]any{"count": 1.0, "reason": "not_found"}}, done["skipped"])
	require.Equal(t, 1, b.conversationsOn(t, "webchat"))

	// Nothing matching: nothing to confirm.
	none := s.ok("delete_conversations", map[string]any{"filter": map[string]any{"channel": "telco_voice"}})
	require.Equal(t, "completed", none["status"])
	require.Equal(t, 0.0, none["affected"])

	s.fails("delete_conversations", map[string]any{"filter": map[string]any{}}, "filter_empty")
	s.fails("delete_conversations", map[string]any{}, "filter_required")
	s.fails("delete_conversations", map[string]any{"filter": map[string]any{"channel": "sms"}, "ids": []string{kept[2]}}, "filter_and_ids")
	e := s.fails("delete_conversations", map[string]any{"ids": []string{"nope"}}, "invalid_id")
	require.Equal(t, "ids[0]", e["param"])
	e = s.fails("delete_conversations", map[string]any{"filter": map[string]any{"older_than": "soon"}}, "invalid_older_than")
	require.Equal(t, "filter.older_than", e["param"])
	s.fails("delete_conversations", map[string]any{"filter": map[string]any{"all": true, "channel": "sms"}}, "all_with_keys")
}

func TestMCPDeleteConversationsOlderThanAndStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	old := b.seedConversations(t, 4, "api")
	b.seedConversations(t, 2, "api")
	_, err := b.store.Pool().Exec(context.Background(), `UPDATE conversations SET created_at = now() - interval '40 days' WHERE id = ANY($1::uuid[])`, old)
	require.NoError(t, err)
	_, err = b.store.Pool().Exec(context.Background(), `UPDATE conversations SET status = 'closed' WHERE id = ANY($1::uuid[])`, old[:3])
	require.NoError(t, err)
	p := s.parked("delete_conversations", map[string]any{"filter": map[string]any{"older_than": "30d", "status": "closed", "source": "assistant"}})
	require.Equal(t, 3.0, p["requested"])
	require.Equal(t, 3.0, s.confirm(p)["affected"])
	require.Equal(t, 3, b.conversationsOn(t, "api"))
}

func TestMCPAllNeedsTheMatchingConfirmCount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	b.seedConversations(t, 12, "sms")
	e := s.fails("delete_conversations", map[string]any{"filter": map[string]any{"all": true}}, "confirm_count_required")
	require.Contains(t, e["message"], "12 conversations match")
	require.Equal(t, "confirm_count", e["param"])
	e = s.fails("delete_conversations", map[string]any{"filter": map[string]any{"all": true}, "confirm_count": 10}, "confirm_count_mismatch")
	require.Contains(t, e["message"], "12 conversations match")
	require.Equal(t, 12, b.conversationsOn(t, "sms"), "nothing deleted, nothing parked")
	p := s.parked("delete_conversations", map[string]any{"filter": map[string]any{"all": true}, "confirm_count": 12})
	require.Contains(t, p["summary"], "Delete 12 conversations (all of them)")
	require.Equal(t, 12.0, s.confirm(p)["affected"])
	require.Equal(t, 0, b.conversationsOn(t, "sms"))
}

// The set is counted again at confirmation: grown by 11% since it was parked, nothing is
// deleted and the action resolves as aborted_drift; grown by 9%, it runs (on the new set).
func TestMCPDriftAbortsAtElevenPercentAndRunsAtNine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	b.seedConversations(t, 100, "sms")
	p := s.parked("delete_conversations", map[string]any{"filter": map[string]any{"channel": "sms"}})
	require.Equal(t, 100.0, p["requested"])
	b.seedConversations(t, 11, "sms")
	e := s.fails("confirm_action", map[string]any{"action_id": p["action_id"], "code": p["code"]}, "aborted_drift")
	require.Contains(t, e["message"], "100 conversations matched")
	require.Contains(t, e["message"], "111 match now")
	require.Equal(t, 111, b.conversationsOn(t, "sms"), "nothing deleted")
	require.Equal(t, []string{"aborted_drift"}, b.resolutions(t, p["action_id"].(string)))
	s.fails("confirm_action", map[string]any{"action_id": p["action_id"], "code": p["code"]}, "action_resolved")

	p = s.parked("delete_conversations", map[string]any{"filter": map[string]any{"channel": "sms"}})
	require.Equal(t, 111.0, p["requested"])
	b.seedConversations(t, 9, "sms") // 8.1% more
	done := s.confirm(p)
	require.Equal(t, 120.0, done["affected"])
	require.Equal(t, 0, b.conversationsOn(t, "sms"))
	require.Equal(t, []string{"approved"}, b.resolutions(t, p["action_id"].(string)))
}

func TestMCPConfirmActionChecksCodeAndRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.mcp(t, b.url, b.key)
	b.seedConversations(t, 3, "sms")
	p := admin.parked("delete_conversations", map[string]any{"filter": map[string]any{"channel": "sms"}})

	member := b.mcp(t, b.url, b.newKey(t, b.workspace, "member"))
	member.fails("delete_conversations", map[string]any{"filter": map[string]any{"channel": "sms"}}, "role_not_allowed")
	member.fails("confirm_action", map[string]any{"action_id": p["action_id"], "code": p["code"]}, "role_not_allowed")
	require.Empty(t, b.resolutions(t, p["action_id"].(string)), "a refused confirmer leaves the action pending")

	other := setup(t)
	theirs := other.mcp(t, other.url, other.key)
	theirs.fails("confirm_action", map[string]any{"action_id": p["action_id"], "code": p["code"]}, "action_not_found")

	admin.fails("confirm_action", map[string]any{"action_id": p["action_id"], "code": "000000x"}, "wrong_code")
	require.Equal(t, []string{"rejected"}, b.resolutions(t, p["action_id"].(string)), "a wrong code cancels it")
	admin.fails("confirm_action", map[string]any{"action_id": p["action_id"], "code": p["code"]}, "action_resolved")
	require.Equal(t, 3, b.conversationsOn(t, "sms"))
}

// newChannel stores a channel, connected unless it is a voice channel (which this server
// does not carry yet), and returns its id. The channel layer's own tests connect channels
// over /api against a carrier faked at the wire; the bulk tools only need the rows.
func (b *testBundle) newChannel(t *testing.T, provider, name string) string {
	t.Helper()
	w := store.ChannelWrite{ID: store.NewChannelID(), Provider: provider, Name: name, Config: json.RawMessage(`{}`),
		Status: store.ChannelConnected, InboundToken: uuid.NewString()}
	if provider == "telco_voice" {
		why := "not carried yet"
		w.Status, w.Setup = store.ChannelNeedsSetup, &why
	}
	c, err := b.store.CreateChannel(context.Background(), b.workspace.ID, w)
	require.NoError(t, err)
	return c.ID.String()
}

func TestMCPDeleteChannelsRemovesTheirDeployments(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	agentID := b.newAgent(t, "Switch")
	sms1, sms2 := b.newChannel(t, "sms", "Line one"), b.newChannel(t, "sms", "Line two")
	web := b.newChannel(t, "webchat", "Site")
	voice := b.newChannel(t, "telco_voice", "Phones")
	s.ok("deploy_agent", map[string]any{"agent_id": agentID, "channel_id": sms1})
	s.ok("deploy_agent", map[string]any{"agent_id": agentID, "channel_id": web})
	deployments := func() int {
		return b.countWhere(t, `SELECT count(*) FROM deployments WHERE workspace_id = $1`, b.workspace.ID)
	}
	require.Equal(t, 2, deployments())

	p := s.parked("delete_channels", map[string]any{"filter": map[string]any{"provider": "sms"}})
	require.Equal(t, 2.0, p["requested"])
	require.Contains(t, p["summary"], "Line one (sms)")
	done := s.confirm(p)
	require.Equal(t, 2.0, done["affected"])
	require.Equal(t, 1, deployments(), "the sms channel's deployment went with it")

	p = s.parked("delete_channels", map[string]any{"filter": map[string]any{"status": "unused"}})
	require.Equal(t, 1.0, p["requested"], "only the voice channel has no agent")
	s.confirm(p)

	p = s.parked("delete_channels", map[string]any{"ids": []string{web, sms2}})
	done = s.confirm(p)
	require.Equal(t, 1.0, done["affected"])
	require.Equal(t, []any{map[string]any{"count": 1.0, "reason": "not_found"}}, done["skipped"])
	require.Equal(t, 0, deployments())
	require.Equal(t, 0, b.countWhere(t, `SELECT count(*) FROM channels WHERE workspace_id = $1`, b.workspace.ID))
	_ = voice
}

func TestMCPUndeployAgentsByFilterAndByIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	x, y := b.newAgent(t, "Xavier"), b.newAgent(t, "Yolanda")
	ch := b.newChannel(t, "sms", "Main")
	s.ok("deploy_agent", map[string]any{"agent_id": x, "channel_id": ch})
	s.ok("deploy_agent", map[string]any{"agent_id": x, "channel": "webchat"})
	dy := s.ok("deploy_agent", map[string]any{"agent_id": y, "channel_id": ch})
	s.ok("deploy_agent", map[string]any{"agent_id": y, "channel": "webchat"})

	p := s.parked("undeploy_agents", map[string]any{"filter": map[string]any{"agent_id": x}})
	require.Equal(t, 2.0, p["requested"])
	require.Contains(t, p["summary"], "Xavier on Main (sms)")
	require.Equal(t, 2.0, s.confirm(p)["affected"])

	p = s.parked("undeploy_agents", map[string]any{"ids": []string{dy["deploymentId"].(string)}})
	require.Equal(t, 1.0, s.confirm(p)["affected"])
	left := b.countWhere(t, `SELECT count(*) FROM deployments WHERE workspace_id = $1`, b.workspace.ID)
	require.Equal(t, 1, left, "only Yolanda's webchat deployment is left")
	require.Equal(t, 2, b.countWhere(t, `SELECT count(*) FROM agents WHERE workspace_id = $1`, b.workspace.ID), "the agents stay")
}

// The builder assistant runs the same tools over /v1: the call parks, the reply names the
// count and the code, `YES <code>` runs it, and a grown set aborts.
func TestAssistantBulkDeleteParksAndRunsOnYes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.consentFlow(t)
	b.seedConversations(t, 20, "sms")
	call := func(args string) {
		b.vendors["beta"].Push(
			llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "delete_conversations", Arguments: json.RawMessage(args)}}},
			llmtest.Reply{Text: "Shall I?"},
		)
	}
	// {all: true} without the count: the model reads the failure naming it.
	call(`{"filter":{"all":true}}`)
	f.say(t, "delete every conversation")
	reqs := b.vendors["beta"].Requests()
	last := reqs[len(reqs)-1].Messages
	require.Contains(t, last[len(last)-1].ToolResults[0].Content, "confirm_count")
	require.Contains(t, last[len(last)-1].ToolResults[0].Content, "match now")

	call(`{"filter":{"channel":"sms"}}`)
	reply := f.say(t, "delete the sms conversations")
	m := yesCode.FindStringSubmatch(reply)
	require.NotNil(t, m, reply)
	require.Contains(t, reply, "Delete 20 conversations (channel sms)")
	requested := f.event(t, "confirmation.requested")
	require.Equal(t, m[1], requested["action_code"])

	b.seedConversations(t, 3, "sms") // 15% more
	reply = f.say(t, "YES "+m[1])
	require.Contains(t, reply, "Nothing was done")
	require.Contains(t, reply, "23 match now")
	require.Equal(t, "aborted_drift", f.event(t, "confirmation.resolved")["resolution"])
	require.Equal(t, 23, b.conversationsOn(t, "sms"))

	call(`{"filter":{"channel":"sms"}}`)
	m = yesCode.FindStringSubmatch(f.say(t, "then delete them now"))
	require.NotNil(t, m)
	f.event(t, "confirmation.requested")
	reply = f.say(t, "yes "+m[1])
	require.Contains(t, reply, "Done")
	require.Contains(t, reply, `"affected":23`)
	require.Equal(t, "approved", f.event(t, "confirmation.resolved")["resolution"])
	require.Equal(t, 0, b.conversationsOn(t, "sms"))
}

// delete_conversations {all: true} confirmed in the assistant's own conversation keeps that
// conversation (its turn is being written) and says so.
func TestAssistantBulkDeleteKeepsTheConversationItRunsIn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := b.consentFlow(t)
	b.seedConversations(t, 4, "sms")
	b.vendors["beta"].Push(llmtest.Reply{Text: "Hello."})
	f.say(t, "hello") // the assistant's conversation: the fifth
	b.vendors["beta"].Push(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "delete_conversations", Arguments: json.RawMessage(`{"filter":{"all":true},"confirm_count":5}`)}}},
		llmtest.Reply{Text: "Confirm?"},
	)
	m := yesCode.FindStringSubmatch(f.say(t, "wipe everything"))
	require.NotNil(t, m)
	reply := f.say(t, "YES "+m[1])
	require.Contains(t, reply, "Done")
	require.Contains(t, reply, "current_conversation")
	require.Contains(t, reply, `"affected":4`)
	require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM conversations WHERE workspace_id = $1`, b.workspace.ID))
}

func (b *testBundle) seedContacts(t *testing.T, n int, tags []string) []string {
	t.Helper()
	return b.returningIDs(t, `INSERT INTO contacts (workspace_id, name, tags) SELECT $1, 'Contact ' || g, $2 FROM generate_series(1, $3) g RETURNING id::text`,
		b.workspace.ID, tags, n)
}

func (b *testBundle) seedCampaign(t *testing.T, name, status string) string {
	t.Helper()
	return b.returningIDs(t, `INSERT INTO campaigns (workspace_id, name, status) VALUES ($1, $2, $3) RETURNING id::text`, b.workspace.ID, name, status)[0]
}

func (b *testBundle) returningIDs(t *testing.T, sql string, args ...any) []string {
	t.Helper()
	rows, err := b.store.Pool().Query(context.Background(), sql, args...)
	require.NoError(t, err)
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

func (b *testBundle) liveContacts(t *testing.T) int {
	return b.countWhere(t, `SELECT count(*) FROM contacts WHERE workspace_id = $1 AND deleted_at IS NULL`, b.workspace.ID)
}

func TestMCPDeleteContactsIsASoftDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	vip := b.seedContacts(t, 4, []string{"vip", "spring"})
	others := b.seedContacts(t, 3, []string{"spring"})
	list := b.returningIDs(t, `INSERT INTO contact_lists (workspace_id, name) VALUES ($1, 'Newsletter') RETURNING id::text`, b.workspace.ID)[0]
	for _, c := range others[:2] {
		_, err := b.store.Pool().Exec(context.Background(), `INSERT INTO contact_list_members (workspace_id, list_id, contact_id) VALUES ($1, $2, $3)`, b.workspace.ID, list, c)
		require.NoError(t, err)
	}

	p := s.parked("delete_contacts", map[string]any{"filter": map[string]any{"tag": "vip"}})
	require.Equal(t, 4.0, p["requested"])
	require.Contains(t, p["summary"], "Contact ")
	require.Equal(t, 4.0, s.confirm(p)["affected"])
	require.Equal(t, 3, b.liveContacts(t))
	require.Equal(t, 7, b.countWhere(t, `SELECT count(*) FROM contacts WHERE workspace_id = $1`, b.workspace.ID), "soft: the rows stay, recoverable")

	p = s.parked("delete_contacts", map[string]any{"filter": map[string]any{"list_id": list}})
	require.Equal(t, 2.0, p["requested"])
	require.Equal(t, 2.0, s.confirm(p)["affected"])

	// ids: one live, one already deleted (not in the set), one unknown.
	p = s.parked("delete_contacts", map[string]any{"ids": []string{others[2], vip[0], uuid.NewString()}})
	done := s.confirm(p)
	require.Equal(t, 1.0, done["affected"])
	require.Equal(t, []any{map[string]any{"count": 2.0, "reason": "not_found"}}, done["skipped"])
	require.Equal(t, 0, b.liveContacts(t))
}

func TestMCPDeleteCampaignsSkipsRunningUnlessIncluded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	b.seedCampaign(t, "Spring draft", "draft")
	b.seedCampaign(t, "Old news", "completed")
	running := b.seedCampaign(t, "Live now", "running")
	campaigns := func() int {
		return b.countWhere(t, `SELECT count(*) FROM campaigns WHERE workspace_id = $1`, b.workspace.ID)
	}

	e := s.fails("delete_campaigns", map[string]any{"filter": map[string]any{"all": true}, "confirm_count": 3}, "confirm_count_mismatch")
	require.Contains(t, e["message"], "2 campaigns match", "running ones are not counted unless included")
	p := s.parked("delete_campaigns", map[string]any{"filter": map[string]any{"all": true}, "confirm_count": 2})
	require.Equal(t, 3.0, p["requested"])
	require.Contains(t, p["summary"], "leaving alone 1 (running)")
	done := s.confirm(p)
	require.Equal(t, 2.0, done["affected"])
	require.Equal(t, []any{map[string]any{"id": running, "name": "Live now (running)", "reason": "running"}}, done["skipped"])
	require.Equal(t, 1, campaigns())

	// By status, running: nothing to do without include_running; the skip says why.
	none := s.ok("delete_campaigns", map[string]any{"filter": map[string]any{"status": "running"}})
	require.Equal(t, 0.0, none["affected"])
	require.Equal(t, "running", none["skipped"].([]any)[0].(map[string]any)["reason"])

	p = s.parked("delete_campaigns", map[string]any{"ids": []string{running}, "include_running": true})
	require.Equal(t, 1.0, s.confirm(p)["affected"])
	require.Equal(t, 0, campaigns())
}

func TestMCPCancelCampaignsRunsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	a := b.seedCampaign(t, "A", "running")
	b.seedCampaign(t, "B", "scheduled")
	c := b.seedCampaign(t, "C", "paused")
	d := b.seedCampaign(t, "D", "draft")
	status := func(id string) string {
		var st string
		require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT status FROM campaigns WHERE id = $1`, id).Scan(&st))
		return st
	}

	done := s.ok("cancel_campaigns", map[string]any{"filter": map[string]any{"status": "running"}})
	require.Equal(t, "completed", done["status"], "no confirmation")
	require.Equal(t, 1.0, done["affected"])
	require.Equal(t, "cancelled", status(a))

	done = s.ok("cancel_campaigns", map[string]any{"ids": []string{c, d}})
	require.Equal(t, 1.0, done["affected"])
	require.Equal(t, []any{map[string]any{"id": d, "name": "D (draft)", "reason": "not_in_flight"}}, done["skipped"])
	require.Equal(t, "cancelled", status(c))
	require.Equal(t, "draft", status(d))

	e := s.fails("cancel_campaigns", map[string]any{"filter": map[string]any{"all": true}}, "confirm_count_required")
	require.Contains(t, e["message"], "1 campaign matches")
	done = s.ok("cancel_campaigns", map[string]any{"filter": map[string]any{"all": true}, "confirm_count": 1})
	require.Equal(t, 1.0, done["affected"])
	require.Equal(t, 0, b.countWhere(t, `SELECT count(*) FROM campaigns WHERE workspace_id = $1 AND status IN ('scheduled','running','paused')`, b.workspace.ID))
}

// An action parked over MCP expires like any other (the sweep resolves it, without a
// conversation) and never runs.
func TestMCPParkedBulkActionExpires(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.confirmationTTL = 300 * time.Millisecond })
	s := b.mcp(t, b.url, b.key)
	b.seedConversations(t, 2, "sms")
	p := s.parked("delete_conversations", map[string]any{"filter": map[string]any{"channel": "sms"}})
	require.Eventually(t, func() bool { return len(b.resolutions(t, p["action_id"].(string))) == 1 }, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, []string{"expired"}, b.resolutions(t, p["action_id"].(string)))
	e := s.fails("confirm_action", map[string]any{"action_id": p["action_id"], "code": p["code"]}, "action_resolved")
	require.Contains(t, e["message"], "already expired")
	require.Equal(t, 2, b.conversationsOn(t, "sms"))
}
