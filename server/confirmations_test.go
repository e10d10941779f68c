package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// platform.md: "Phone number purchase is a spend action that parks for confirmation and
// fires only after the reply `YES <code>`. Prices are quoted in workspace credits." Over
// REST the purchase answers 202 with the parked action and emits confirmation.requested;
// POST /api/confirmations/{id} with the code buys it; a wrong or expired code buys nothing,
// and the confirming key's role is checked again.
func TestPhoneNumberPurchaseParksUntilConfirmed(t *testing.T) {
	t.Parallel()
	w := newCampaignWorld(t)
	b := w.b
	before := b.balance(t)

	parked := decode[map[string]any](t, b.send(t, http.MethodPost, "/api/phone-numbers", `{"phone_number":"+14155550100","country":"US"}`, http.StatusAccepted))
	require.Equal(t, "awaiting_confirmation", parked["status"])
	require.Equal(t, "buy_phone_number", parked["tool"])
	require.Contains(t, parked["summary"], "+14155550100")
	require.Contains(t, parked["summary"], "115 credits")
	require.NotEmpty(t, parked["code"])
	require.NotEmpty(t, parked["expires_at"])
	id, code := parked["id"].(string), parked["code"].(string)
	require.Empty(t, w.sms.Bought(), "nothing is bought before the confirmation")
	require.Equal(t, before, b.balance(t), "nor charged")
	requested := b.events(t, "confirmation.requested")
	require.Len(t, requested, 1)
	require.Equal(t, id, requested[0].Data["action_id"])

	// Listed as pending, without its code.
	list := decode[struct{ Data []map[string]any }](t, b.send(t, http.MethodGet, "/api/confirmations", "", 200))
	require.Len(t, list.Data, 1)
	require.Equal(t, id, list.Data[0]["id"])
	require.NotContains(t, list.Data[0], "code")

	// The confirming role is checked again: a member may not buy, and the action stays pending.
	member := b.newKey(t, b.workspace, "member")
	resp, raw := b.do(t, http.MethodPost, "/api/confirmations/"+id, "Bearer "+member, `{"code":"`+code+`"}`)
	require.Equal(t, "role_not_allowed", errorOf(t, resp, raw, 403).codeOrEmpty())
	require.Empty(t, w.sms.Bought())

	done := decode[map[string]any](t, b.send(t, http.MethodPost, "/api/confirmations/"+id, `{"code":"`+code+`"}`, 200))
	require.Equal(t, "approved", done["status"])
	require.Equal(t, "+14155550100", done["result"].(map[string]any)["phone_number"])
	require.Equal(t, []string{"+14155550100"}, w.sms.Bought())
	require.Equal(t, before-1_150_000_000, b.balance(t), "115 credits = $1.15, charged once confirmed")
	resolved := b.events(t, "confirmation.resolved")
	require.Len(t, resolved, 1)
	require.Equal(t, "approved", resolved[0].Data["resolution"])
	require.Equal(t, "action_resolved", b.fail(t, http.MethodPost, "/api/confirmations/"+id, `{"code":"`+code+`"}`, 409).codeOrEmpty(), "runs once")

	// A wrong code cancels the purchase; nothing is bought.
	again := decode[map[string]any](t, b.send(t, http.MethodPost, "/api/phone-numbers", `{"phone_number":"+14155550101","country":"US"}`, http.StatusAccepted))
	require.Equal(t, "wrong_code", b.fail(t, http.MethodPost, "/api/confirmations/"+again["id"].(string), `{"code":"000000000"}`, 400).codeOrEmpty())
	require.Equal(t, "action_resolved", b.fail(t, http.MethodPost, "/api/confirmations/"+again["id"].(string), `{"code":"`+again["code"].(string)+`"}`, 409).codeOrEmpty())
	require.Len(t, w.sms.Bought(), 1)

	// An expired one never runs.
	late := decode[map[string]any](t, b.send(t, http.MethodPost, "/api/phone-numbers", `{"phone_number":"+14155550102","country":"US"}`, http.StatusAccepted))
	_, err := b.store.Pool().Exec(t.Context(), `UPDATE pending_actions SET expires_at = now() - interval '1 second' WHERE short_id = $1`, late["id"])
	require.NoError(t, err)
	require.Equal(t, "action_expired", b.fail(t, http.MethodPost, "/api/confirmations/"+late["id"].(string), `{"code":"`+late["code"].(string)+`"}`, 409).codeOrEmpty())
	require.Len(t, w.sms.Bought(), 1)
	require.Equal(t, "action_not_found", b.fail(t, http.MethodPost, "/api/confirmations/act_nope", `{"code":"123456"}`, 404).codeOrEmpty())

	// Only US and CA numbers are instant-purchase: nothing is parked for another country.
	require.Equal(t, "regulatory_bundle_required", b.fail(t, http.MethodPost, "/api/phone-numbers", `{"phone_number":"+4930123456","country":"DE"}`, 422).codeOrEmpty())
	require.Len(t, b.events(t, "confirmation.requested"), 3)
}
