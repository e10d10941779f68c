package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/audit"
	"switchboard/compliance"
)

type auditEntry struct {
	ID    string `json:"id"`
	Actor struct {
		Type  string  `json:"type"`
		ID    *string `json:"id"`
		Label string  `json:"label"`
		Role  string  `json:"role"`
	} `json:"actor"`
	Action     string         `json:"action"`
	TargetType string         `json:"target_type"`
	TargetID   string         `json:"target_id"`
	Summary    map[string]any `json:"summary"`
}

type auditPage struct {
	Data      []auditEntry `json:"data"`
	HasMore   bool         `json:"has_more"`
	NextAfter *string      `json:"next_after"`
}

// auditLog reads GET /api/audit-log?query with the bundle's (admin) key.
func (b *testBundle) auditLog(t *testing.T, query string) auditPage {
	t.Helper()
	return decode[auditPage](t, b.send(t, http.MethodGet, "/api/audit-log?"+query, "", http.StatusOK))
}

// onlyEntry is the one entry of action; it fails unless there is exactly one.
func (b *testBundle) onlyEntry(t *testing.T, action string) auditEntry {
	t.Helper()
	page := b.auditLog(t, "action="+action)
	require.Len(t, page.Data, 1, "one %s entry", action)
	return page.Data[0]
}

// TestAuditLogRecordsEachActionKind performs each audited action through its route and finds
// its entry: who (key or person, with role), what, on what, and a summary of the change.
func TestAuditLogRecordsEachActionKind(t *testing.T) {
	t.Parallel()
	b := setup(t)
	keyEntry := func(t *testing.T, e auditEntry, targetType, targetID string) {
		t.Helper()
		require.Equal(t, "key", e.Actor.Type)
		require.Equal(t, "admin", e.Actor.Role, "the bundle's key")
		require.NotNil(t, e.Actor.ID)
		require.Equal(t, targetType, e.TargetType)
		require.Equal(t, targetID, e.TargetID)
	}

	agentID := b.newAgent(t, "Audited agent")
	e := b.onlyEntry(t, audit.AgentCreated)
	keyEntry(t, e, "agent", agentID)
	require.Equal(t, "Audited agent", e.Summary["name"])

	b.send(t, http.MethodPatch, "/api/agents/"+agentID, `{"greeting":"Good morning!"}`, http.StatusOK)
	e = b.onlyEntry(t, audit.AgentUpdated)
	keyEntry(t, e, "agent", agentID)
	require.Equal(t, map[string]any{"greeting": "Good morning!"}, e.Summary["updates"])

	var dep struct {
		DeploymentID string `json:"deploymentId"`
	}
	require.NoError(t, json.Unmarshal(b.send(t, http.MethodPost, "/api/agents/"+agentID+"/deployments", `{"channel":"webchat"}`, http.StatusCreated), &dep))
	e = b.onlyEntry(t, audit.AgentDeployed)
	keyEntry(t, e, "agent", agentID)
	require.Equal(t, dep.DeploymentID, e.Summary["deployment_id"])
	require.Equal(t, "webchat", e.Summary["channel"])

	b.send(t, http.MethodDelete, "/api/agents/"+agentID+"/deployments/"+dep.DeploymentID, "", http.StatusOK)
	e = b.onlyEntry(t, audit.AgentUndeployed)
	keyEntry(t, e, "agent", agentID)
	require.Equal(t, dep.DeploymentID, e.Summary["deployment_id"])

	var ch struct{ ID string }
	require.NoError(t, json.Unmarshal(b.send(t, http.MethodPost, "/api/channels", `{"provider":"webchat","name":"Audited site"}`, http.StatusCreated), &ch))
	chID := ch.ID
	e = b.onlyEntry(t, audit.ChannelConnected)
	keyEntry(t, e, "channel", chID)
	require.Equal(t, "webchat", e.Summary["provider"])

	b.send(t, http.MethodPut, "/api/retention", `{"retention_days":30}`, http.StatusOK)
	e = b.onlyEntry(t, audit.RetentionChanged)
	keyEntry(t, e, "workspace", b.workspace.ID.String())
	require.Equal(t, map[string]any{"from": nil, "to": float64(30)}, e.Summary)

	contact := b.newContact(t, `{"name":"Eve","phone":"+14155550100"}`)
	b.send(t, http.MethodPost, "/api/contacts/"+contact.ID+"/erase", "", http.StatusOK)
	e = b.onlyEntry(t, audit.ContactErased)
	keyEntry(t, e, "contact", contact.ID)
	require.NotContains(t, mustJSON(t, e.Summary), "Eve", "the entry of an erasure holds no personal data")

	// A bulk tool parks a confirmation; confirming it is audited, and so is the run.
	b.seedContacts(t, 2, []string{"gone"})
	p := decode[bulkPending](t, b.send(t, http.MethodPost, "/api/bulk/delete_contacts", `{"filter":{"tag":"gone"}}`, http.StatusAccepted))
	b.send(t, http.MethodPost, "/api/actions/"+p.ActionID+"/confirm", `{"code":"`+p.Code+`"}`, http.StatusOK)
	e = b.onlyEntry(t, audit.ConfirmationApproved)
	keyEntry(t, e, "action", p.ActionID)
	require.Equal(t, "delete_contacts", e.Summary["tool"])
	e = b.onlyEntry(t, audit.BulkToolRun)
	require.Equal(t, "key", e.Actor.Type)
	require.Equal(t, "bulk_run", e.TargetType)
	require.Equal(t, "delete_contacts", e.Summary["tool"])

	b.mcp(t, b.url, b.key).ok("delete_agent", map[string]any{"agent_id": agentID}) // an MCP tool
	e = b.onlyEntry(t, audit.AgentDeleted)
	keyEntry(t, e, "agent", agentID)

	// Keys: created over a session (a person), revoked with a key.
	owner := b.signedIn(t, "owner")
	resp, raw := owner.do(t, http.MethodPost, "/api/keys", `{"role":"viewer","name":"ci"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var k struct{ ID string }
	require.NoError(t, json.Unmarshal(raw, &k))
	e = b.onlyEntry(t, audit.KeyCreated)
	require.Equal(t, "user", e.Actor.Type)
	require.Equal(t, owner.email, e.Actor.Label)
	require.Equal(t, "owner", e.Actor.Role)
	require.Equal(t, k.ID, e.TargetID)
	require.Equal(t, "viewer", e.Summary["role"])
	var created map[string]any
	require.NoError(t, json.Unmarshal(raw, &created))
	for _, v := range created {
		if secret, ok := v.(string); ok && strings.HasPrefix(secret, "sk-svc_") && len(secret) > 40 {
			require.NotContains(t, mustJSON(t, e.Summary), secret, "never the key's secret")
		}
	}

	b.send(t, http.MethodDelete, "/api/keys/"+k.ID, "", http.StatusOK)
	e = b.onlyEntry(t, audit.KeyRevoked)
	keyEntry(t, e, "key", k.ID)

	// The dashboard's Settings page: an invitation, the spend cap, the compliance acceptance.
	form := func(path string, v url.Values) {
		t.Helper()
		resp, err := owner.client.PostForm(b.url+path, v)
		require.NoError(t, err)
		resp.Body.Close()
		require.Less(t, resp.StatusCode, 400, path)
	}
	form("/dashboard/settings/invite", url.Values{"email": {"newbie@example.com"}, "role": {"member"}})
	e = b.onlyEntry(t, audit.MemberInvited)
	require.Equal(t, "user", e.Actor.Type)
	require.Equal(t, "newbie@example.com", e.Summary["email"])
	require.Equal(t, "member", e.Summary["role"])

	// The Members table changes the invited person's role.
	newbie, err := b.store.UserByEmail(context.Background(), "newbie@example.com")
	require.NoError(t, err)
	form("/dashboard/settings/members/"+newbie.ID.String()+"/role", url.Values{"role": {"admin"}})
	e = b.onlyEntry(t, audit.RoleChanged)
	require.Equal(t, "user", e.Actor.Type)
	require.Equal(t, owner.email, e.Actor.Label)
	require.Equal(t, "user", e.TargetType)
	require.Equal(t, newbie.ID.String(), e.TargetID)
	require.Equal(t, map[string]any{"email": "newbie@example.com", "from": "member", "to": "admin"}, e.Summary)

	form("/dashboard/settings/cap", url.Values{"cap_usd": {"250"}})
	e = b.onlyEntry(t, audit.CapChanged)
	require.Equal(t, "user", e.Actor.Type)
	require.Equal(t, float64(250_000_000_000), e.Summary["monthly_cap_nano_usd"])

	form("/dashboard/settings/compliance", url.Values{"version": {compliance.DefaultVersion}, "agree": {"on"}})
	e = b.onlyEntry(t, audit.ComplianceAccepted)
	require.Equal(t, "user", e.Actor.Type)
	require.Equal(t, "compliance", e.TargetType)

	// Each kind once: the log holds no other entry than those made here.
	all := b.auditLog(t, "limit=200")
	require.Len(t, all.Data, len(audit.Actions))
	require.False(t, all.HasMore)
}

// TestAuditLogFiltersAndPages: filters combine, pages follow next_after without overlap, and
// bad filters are 400s naming their parameter.
func TestAuditLogFiltersAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for _, name := range []string{"One", "Two", "Three", "Four", "Five"} {
		ids = append(ids, b.newAgent(t, name))
	}
	b.send(t, http.MethodPatch, "/api/agents/"+ids[0], `{"greeting":"Hello again!"}`, http.StatusOK)

	require.Len(t, b.auditLog(t, "action=agent.created").Data, 5)
	require.Len(t, b.auditLog(t, "target="+ids[0]).Data, 2)
	require.Len(t, b.auditLog(t, "action=agent.updated&target="+ids[0]).Data, 1)
	require.Len(t, b.auditLog(t, "actor=key").Data, 6)
	require.Empty(t, b.auditLog(t, "actor=user").Data)
	require.Empty(t, b.auditLog(t, "since=2999-01-01T00:00:00Z").Data)
	require.Len(t, b.auditLog(t, "until=2999-01-01T00:00:00Z").Data, 6)

	var seen []string
	query := "limit=4"
	for {
		page := b.auditLog(t, query)
		for _, e := range page.Data {
			seen = append(seen, e.ID)
		}
		if !page.HasMore {
			break
		}
		query = "limit=4&after=" + *page.NextAfter
	}
	require.Len(t, seen, 6)
	newest := b.auditLog(t, "limit=1").Data[0]
	require.Equal(t, "agent.updated", newest.Action, "newest first")

	for query, param := range map[string]string{
		"action=agent.exploded": "action",
		"actor=somebody":        "actor",
		"limit=0":               "limit",
		"since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z": "until",
	} {
		e := b.fail(t, http.MethodGet, "/api/audit-log?"+query, "", http.StatusBadRequest)
		require.Equal(t, param, str(e.Param), query)
	}
	e := b.fail(t, http.MethodGet, "/api/audit-log?after=00000000-0000-4000-8000-000000000000", "", http.StatusNotFound)
	require.Equal(t, "after", str(e.Param))

	// Another workspace sees none of it, not even by cursor.
	ws2, err := b.store.CreateWorkspace(context.Background(), "rival", 1_000_000_000)
	require.NoError(t, err)
	other := b.newKey(t, ws2, "owner")
	resp, raw := b.do(t, http.MethodGet, "/api/audit-log?after="+seen[0], "Bearer "+other, "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(raw))
	resp, raw = b.do(t, http.MethodGet, "/api/audit-log", "Bearer "+other, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, `[]`, strings.TrimSpace(string(mustRaw(t, raw, "data"))))
}

// TestAuditEntriesCannotChange: no route offers it, and the database refuses an UPDATE, a
// DELETE and a TRUNCATE of the log, whoever sends them.
func TestAuditEntriesCannotChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.newAgent(t, "Kept")
	e := b.onlyEntry(t, audit.AgentCreated)
	for _, method := range []string{http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodPost} {
		resp, _ := b.do(t, method, "/api/audit-log", "Bearer "+b.key, `{}`)
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method)
		resp, _ = b.do(t, method, "/api/audit-log/"+e.ID, "Bearer "+b.key, `{}`)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, method)
	}
	ctx := context.Background()
	for _, sql := range []string{
		`UPDATE audit_log SET action = 'agent.deleted' WHERE id = $1`,
		`DELETE FROM audit_log WHERE id = $1`,
		`TRUNCATE audit_log`,
	} {
		args := []any{e.ID}
		if strings.HasPrefix(sql, "TRUNCATE") {
			args = nil
		}
		_, err := b.store.Pool().Exec(ctx, sql, args...)
		require.ErrorContains(t, err, "audit log entries cannot be changed or deleted", sql)
	}
	require.Equal(t, e, b.onlyEntry(t, audit.AgentCreated), "unchanged")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

func mustRaw(t *testing.T, raw []byte, field string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[field]
}
