package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

type bulkPending struct {
	Success   bool
	Status    string
	ActionID  string `json:"action_id"`
	Code      string
	Summary   string
	Requested int
	Affected  int
	Sample    []struct{ ID, Name string }
}

type bulkResult struct {
	Success   bool
	Requested int
	Affected  int
	Status    string
	Skipped   []map[string]any
	Sample    []struct{ ID, Name string }
}

// TestRESTBulkDeleteParksAndRunsOnConfirm: a destructive bulk tool over REST parks (202),
// nothing changes until POST /api/actions/{id}/confirm with the code, which runs it once.
func TestRESTBulkDeleteParksAndRunsOnConfirm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedContacts(t, 3, []string{"vip"})
	b.seedContacts(t, 2, []string{"other"})

	p := decode[bulkPending](t, b.send(t, http.MethodPost, "/api/bulk/delete_contacts", `{"filter":{"tag":"vip"}}`, http.StatusAccepted))
	require.Equal(t, "awaiting_confirmation", p.Status)
	require.Equal(t, 3, p.Requested)
	require.Equal(t, 0, p.Affected)
	require.Contains(t, p.Summary, "Delete 3 contacts")
	require.Len(t, p.Sample, 3)
	require.Equal(t, 5, b.liveContacts(t), "nothing done yet")
	require.Len(t, b.events(t, "confirmation.requested"), 1)

	// The confirming key needs the tool's permission; refused, the action stays pending.
	viewer := b.newKey(t, b.workspace, "viewer")
	resp, raw := b.do(t, http.MethodPost, "/api/actions/"+p.ActionID+"/confirm", "Bearer "+viewer, `{"code":"`+p.Code+`"}`)
	require.Equal(t, "role_not_allowed", errorOf(t, resp, raw, 403).codeOrEmpty())

	done := decode[bulkResult](t, b.send(t, http.MethodPost, "/api/actions/"+p.ActionID+"/confirm", `{"code":"`+p.Code+`"}`, 200))
	require.True(t, done.Success)
	require.Equal(t, 3, done.Affected)
	require.Equal(t, "completed", done.Status)
	require.Equal(t, 2, b.liveContacts(t))
	require.Equal(t, []string{"approved"}, b.resolutions(t, p.ActionID))
	e := b.fail(t, http.MethodPost, "/api/actions/"+p.ActionID+"/confirm", `{"code":"`+p.Code+`"}`, 409)
	require.Equal(t, "action_resolved", str(e.Code))

	// A wrong code cancels the action.
	p = decode[bulkPending](t, b.send(t, http.MethodPost, "/api/bulk/delete_contacts", `{"filter":{"tag":"other"}}`, http.StatusAccepted))
	e = b.fail(t, http.MethodPost, "/api/actions/"+p.ActionID+"/confirm", `{"code":"000000x"}`, 400)
	require.Equal(t, "wrong_code", str(e.Code))
	b.fail(t, http.MethodPost, "/api/actions/"+p.ActionID+"/confirm", `{"code":"`+p.Code+`"}`, 409)
	require.Equal(t, 2, b.liveContacts(t))
	b.fail(t, http.MethodPost, "/api/actions/act_unknown/confirm", `{"code":"123456"}`, 404)
}

func TestRESTBulkRulesAndImmediateTools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedConversations(t, 10, "webchat")

	// {all: true} needs the matching confirm_count; unknown keys are refused; a member
	// lacks the bulk permission.
	e := b.fail(t, http.MethodPost, "/api/bulk/delete_conversations", `{"filter":{"all":true}}`, 400)
	require.Equal(t, "confirm_count", str(e.Param))
	require.Contains(t, e.Message, "confirm_count: 10")
	b.fail(t, http.MethodPost, "/api/bulk/delete_conversations", `{"filter":{"all":true},"confirm_count":10,"bogus":1}`, 400)
	b.fail(t, http.MethodPost, "/api/bulk/delete_everything", `{}`, 400)
	member := b.newKey(t, b.workspace, "member")
	resp, raw := b.do(t, http.MethodPost, "/api/bulk/cancel_campaigns", "Bearer "+member, `{"filter":{"status":"running"}}`)
	require.Equal(t, "role_not_allowed", errorOf(t, resp, raw, 403).codeOrEmpty())

	// Drift: the set grew by more than 10% between parking and confirming.
	p := decode[bulkPending](t, b.send(t, http.MethodPost, "/api/bulk/delete_conversations", `{"filter":{"all":true},"confirm_count":10}`, http.StatusAccepted))
	b.seedConversations(t, 2, "webchat")
	e = b.fail(t, http.MethodPost, "/api/actions/"+p.ActionID+"/confirm", `{"code":"`+p.Code+`"}`, 409)
	require.Equal(t, "aborted_drift", str(e.Code))
	require.Equal(t, 12, b.conversationsOn(t, "webchat"))

	// cancel_campaigns runs at once; an empty destructive set answers 200 at once too.
	running := b.seedCampaign(t, "Live", "running")
	b.seedCampaign(t, "Draft", "draft")
	done := decode[bulkResult](t, b.send(t, http.MethodPost, "/api/bulk/cancel_campaigns", `{"ids":["`+running+`"]}`, 200))
	require.Equal(t, 1, done.Affected)
	require.Equal(t, "completed", done.Status)
	none := decode[bulkResult](t, b.send(t, http.MethodPost, "/api/bulk/delete_contacts", `{"filter":{"tag":"nobody"}}`, 200))
	require.Equal(t, 0, none.Affected)

	var run string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT short_id FROM bulk_runs WHERE workspace_id = $1`, b.workspace.ID).Scan(&run))
	got := decode[bulkResult](t, b.send(t, http.MethodGet, "/api/bulk/runs/"+run, "", 200))
	require.Equal(t, 1, got.Affected)
	require.Equal(t, "completed", got.Status)
	b.fail(t, http.MethodGet, "/api/bulk/runs/bulk_unknown", "", 404)
}
