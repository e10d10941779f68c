package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/compliance"
	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/sms/smstest"
	"switchboard/store"
)

type contactView struct {
	ID         string  `json:"id"`
	Name       *string `json:"name"`
	Phone      *string `json:"phone"`
	Email      *string `json:"email"`
	Tags       []string
	Lists      []struct{ ID, Name string }
	Source     string     `json:"source"`
	ConsentSMS bool       `json:"consent_sms"`
	DeletedAt  *time.Time `json:"deleted_at"`
}

func decode[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(raw, &v), string(raw))
	return v
}

// send is do with the bundle's key, requiring the status.
func (b *testBundle) send(t *testing.T, method, path, body string, status int) []byte {
	t.Helper()
	resp, raw := b.do(t, method, path, "Bearer "+b.key, body)
	require.Equal(t, status, resp.StatusCode, "%s %s: %s", method, path, raw)
	return raw
}

func (b *testBundle) newContact(t *testing.T, body string) contactView {
	t.Helper()
	return decode[contactView](t, b.send(t, http.MethodPost, "/api/contacts", body, http.StatusCreated))
}

func (b *testBundle) listContacts(t *testing.T, query string) []contactView {
	t.Helper()
	page := decode[struct{ Data []contactView }](t, b.send(t, http.MethodGet, "/api/contacts"+query, "", http.StatusOK))
	return page.Data
}

func ids(cs []contactView) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID)
	}
	sort.Strings(out)
	return out
}

func sorted(s ...string) []string { sort.Strings(s); return s }

// TestContactsCreateFilterSoftDeleteAndRestore: the rules are package contacts' tests; here,
// each route's shape and statuses, and the query parameters reaching the filters.
func TestContactsCreateFilterSoftDeleteAndRestore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ada := b.newContact(t, `{"name":"Ada","phone":"+1 (415) 555-0100","tags":["vip","beta"],"lists":["Newsletter"],"consent_sms":true}`)
	require.Equal(t, "+14155550100", *ada.Phone, "E.164 with the punctuation removed")
	require.Equal(t, "api", ada.Source)
	require.Len(t, ada.Lists, 1)
	bob := b.newContact(t, `{"name":"Bob","email":"bob@example.com","tags":["beta"]}`)

	e := b.fail(t, http.MethodPost, "/api/contacts", `{"name":"Nobody","phone":"0415 555"}`, 400)
	require.Equal(t, "phone", str(e.Param))

	require.Equal(t, sorted(ada.ID, bob.ID), ids(b.listContacts(t, "?tag=beta")))
	require.Equal(t, []string{ada.ID}, ids(b.listContacts(t, "?tag=vip")))
	require.Equal(t, []string{ada.ID}, ids(b.listContacts(t, "?list_id="+ada.Lists[0].ID)))
	require.Equal(t, []string{ada.ID}, ids(b.listContacts(t, "?consent_sms=true")))
	require.Equal(t, []string{bob.ID}, ids(b.listContacts(t, "?q=EXAMPLE")))
	page := decode[struct {
		Data      []contactView
		HasMore   bool    `json:"has_more"`
		NextAfter *string `json:"next_after"`
	}](t, b.send(t, http.MethodGet, "/api/contacts?limit=1", "", 200))
	require.True(t, page.HasMore)
	rest := b.listContacts(t, "?limit=1&after="+*page.NextAfter)
	require.Equal(t, sorted(ada.ID, bob.ID), sorted(page.Data[0].ID, rest[0].ID))

	patched := decode[contactView](t, b.send(t, http.MethodPatch, "/api/contacts/"+bob.ID, `{"phone":"+442071838750","email":null,"consent_sms":true}`, 200))
	require.Nil(t, patched.Email)
	require.Equal(t, "+442071838750", *patched.Phone)

	deleted := decode[contactView](t, b.send(t, http.MethodDelete, "/api/contacts/"+ada.ID, "", 200))
	require.NotNil(t, deleted.DeletedAt)
	require.Equal(t, []string{bob.ID}, ids(b.listContacts(t, "")))
	require.Equal(t, []string{ada.ID}, ids(b.listContacts(t, "?deleted=true")))
	e = b.fail(t, http.MethodPatch, "/api/contacts/"+ada.ID, `{"name":"Ada L."}`, 409)
	require.Equal(t, "contact_deleted", str(e.Code))
	restored := decode[contactView](t, b.send(t, http.MethodPost, "/api/contacts/"+ada.ID+"/restore", "", 200))
	require.Nil(t, restored.DeletedAt)
	require.Equal(t, sorted(ada.ID, bob.ID), ids(b.listContacts(t, "")))

	b.fail(t, http.MethodGet, "/api/contacts/"+uuid.NewString(), "", 404)
	other, err := b.store.CreateWorkspace(context.Background(), "other", 1_000_000_000)
	require.NoError(t, err)
	resp, raw := b.do(t, http.MethodGet, "/api/contacts/"+ada.ID, "Bearer "+b.newKey(t, other, "admin"), "")
	errorOf(t, resp, raw, 404)
}

// fail calls with the bundle's key and returns the error of the expected status.
func (b *testBundle) fail(t *testing.T, method, path, body string, status int) apiError {
	t.Helper()
	resp, raw := b.do2(t, method, path, body)
	return errorOf(t, resp, raw, status)
}

// do2 is do with the bundle's key.
func (b *testBundle) do2(t *testing.T, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return b.do(t, method, path, "Bearer "+b.key, body)
}

func (b *testBundle) importCSV(t *testing.T, csv, list string) (*http.Response, []byte) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreateFormFile("file", "contacts.csv")
	require.NoError(t, err)
	_, _ = part.Write([]byte(csv))
	if list != "" {
		require.NoError(t, w.WriteField("list", list))
	}
	require.NoError(t, w.Close())
	return b.doRaw(t, http.MethodPost, "/api/contacts/import", b.key, w.FormDataContentType(), body.String())
}

// TestContactsImportOverHTTP: the import's rules are package contacts' tests; here, the
// multipart upload, the report's shape and the refusals' statuses.
func TestContactsImportOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	csv := "Name,Phone,Email\n" +
		"Bob,+14155550111,\n" + // row 2: new
		"Carol,555-0199,\n" // row 3: bad phone
	resp, raw := b.importCSV(t, csv, "Spring promo")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	res := decode[struct {
		Object                         string
		Rows, Created, Updated, Failed int
		Errors                         []struct {
			Row            int
			Field, Message string
		}
		Truncated *bool `json:"errors_truncated"`
	}](t, raw)
	require.Equal(t, "contact_import", res.Object)
	require.Equal(t, [4]int{2, 1, 0, 1}, [4]int{res.Rows, res.Created, res.Updated, res.Failed}, "rows, created, updated, failed")
	require.Len(t, res.Errors, 1)
	require.Equal(t, 3, res.Errors[0].Row)
	require.Equal(t, "phone", res.Errors[0].Field)
	require.NotEmpty(t, res.Errors[0].Message)
	require.NotNil(t, res.Truncated)
	lists := decode[struct{ Data []struct{ Name string } }](t, b.send(t, http.MethodGet, "/api/contact-lists", "", 200))
	require.Equal(t, "Spring promo", lists.Data[0].Name, "the list field reaches the import")

	resp, raw = b.importCSV(t, "name,fone\nAda,+14155550100\n", "")
	e := errorOf(t, resp, raw, 400)
	require.Equal(t, "unknown_column", str(e.Code))
	resp, raw = b.doRaw(t, http.MethodPost, "/api/contacts/import", b.key, "text/csv", "name,phone\n")
	errorOf(t, resp, raw, 415)
}

// campaignWorld is a workspace ready to run campaigns: an agent with an sms deployment, a
// phone number, contacts, and the SMS provider faked at the wire.
type campaignWorld struct {
	b            *testBundle
	sms          *smstest.Server
	agentID      string
	deploymentID string
}

func newCampaignWorld(t *testing.T, opts ...func(*setupOpts)) *campaignWorld {
	t.Helper()
	fake := smstest.New(t)
	opts = append([]func(*setupOpts){func(o *setupOpts) { o.smsBaseURL = fake.URL }}, opts...)
	b := setup(t, opts...)
	w := &campaignWorld{b: b, sms: fake, agentID: b.newAgent(t, "Outbound agent")}
	d, err := b.store.DeployAgent(context.Background(), b.workspace.ID, store.Deploy{AgentID: uuid.MustParse(w.agentID), ChannelType: "sms", Config: json.RawMessage(`{}`)})
	require.NoError(t, err)
	w.deploymentID = d.ID.String()
	return w
}

// accept records an owner's acceptance of version.
func (b *testBundle) accept(t *testing.T, version string) {
	t.Helper()
	ctx := context.Background()
	u, err := b.store.CreateUser(ctx, b.workspace.ID, "owner-"+version+"@example.com", "owner", tokenSum(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	_, err = b.store.AcceptCompliance(ctx, b.workspace.ID, version, u.ID, u.Email, "owner")
	require.NoError(t, err)
}

func tokenSum() []byte {
	sum := sha256.Sum256([]byte(uuid.NewString()))
	return sum[:]
}

type campaignView struct {
	ID           string  `json:"id"`
	Status       string  `json:"status"`
	PausedReason *string `json:"paused_reason"`
	Counts       struct{ Sent, Delivered, Undelivered, Failed, Skipped int }
}

func requireGate(t *testing.T, resp *http.Response, raw []byte) {
	t.Helper()
	require.Equal(t, http.StatusConflict, resp.StatusCode, string(raw))
	require.JSONEq(t, `{"error":"outbound_compliance_required","version":"`+compliance.DefaultVersion+`"}`, string(raw))
}

func TestCampaignGateBeforeAndAfterAcceptance(t *testing.T) {
	t.Parallel()
	w := newCampaignWorld(t)
	b := w.b

	// Drafts are never gated; a member may draft.
	member := b.newKey(t, b.workspace, "member")
	resp, raw := b.do(t, http.MethodPost, "/api/campaigns", "Bearer "+member, `{"name":"Spring","draft":true}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	draft := decode[campaignView](t, raw)
	require.Equal(t, "draft", draft.Status)

	// A launch is gated, before its body is looked at: an empty or invalid body too.
	for _, body := range []string{`{"name":"Launch now"}`, `{}`, `{"name": 5, "draft": "no"}`, `{"draft":false}`} {
		resp, raw := b.do2(t, http.MethodPost, "/api/campaigns", body)
		requireGate(t, resp, raw)
	}
	resp, raw = b.do2(t, http.MethodPost, "/api/campaigns/", `{"name":"Launch now"}`)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "the spec's spelling with a slash: %s", raw)
	resp, raw = b.do2(t, http.MethodPost, "/api/campaigns/"+draft.ID+"/start", "")
	requireGate(t, resp, raw)
	// The role check comes first: a member may not start, gate or no gate.
	resp, raw = b.do(t, http.MethodPost, "/api/campaigns/"+draft.ID+"/start", "Bearer "+member, "")
	require.Equal(t, "role_not_allowed", errorOf(t, resp, raw, 403).codeOrEmpty())
	// Issue 46, the gate order: "Auth, then the role (403 for a member starting or launching a
	// campaign), then the compliance gate (409 `outbound_compliance_required`), then body
	// validation." A member's launch by create (no draft: true) is a 403 before the gate too,
	// whatever its body.
	for _, body := range []string{`{"name":"Member launch"}`, `{}`, `{"name": 5}`} {
		resp, raw = b.do(t, http.MethodPost, "/api/campaigns", "Bearer "+member, body)
		require.Equal(t, "role_not_allowed", errorOf(t, resp, raw, 403).codeOrEmpty(), body)
	}
	resp, raw = b.do(t, http.MethodPost, "/api/campaigns/", "Bearer "+member, `{"name":"Member launch"}`)
	require.Equal(t, "role_not_allowed", errorOf(t, resp, raw, 403).codeOrEmpty(), "the spelling with a slash")
	require.Equal(t, 1, b.count(t, "campaigns"), "nothing written by the gated calls")

	// An acceptance of another (older) version does not open the gate of the current one.
	b.accept(t, "v0")
	resp, raw = b.do2(t, http.MethodPost, "/api/campaigns/"+draft.ID+"/start", "")
	requireGate(t, resp, raw)

	b.accept(t, compliance.DefaultVersion)
	// Past the gate, the body and the campaign are checked.
	resp, raw = b.do2(t, http.MethodPost, "/api/campaigns", `{"draft":false}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(raw))
	resp, raw = b.do2(t, http.MethodPost, "/api/campaigns/"+draft.ID+"/start", "")
	e := errorOf(t, resp, raw, 422)
	require.Equal(t, "agent_id", str(e.Param))

	// Draft-then-start with everything set, on a workspace with a number.
	_ = b.send(t, http.MethodPatch, "/api/campaigns/"+draft.ID, `{"agent_id":"`+w.agentID+`","deployment_id":"`+w.deploymentID+`","first_message":"Hi!","audience":{"tags":["none-yet"]}}`, 200)
	resp, raw = b.do2(t, http.MethodPost, "/api/campaigns/"+draft.ID+"/start", "")
	require.Equal(t, "no_sending_number", errorOf(t, resp, raw, 409).codeOrEmpty())
	b.buyNumber(t)
	started := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns/"+draft.ID+"/start", "", 200))
	require.Contains(t, []string{"running", "completed"}, started.Status)

	// And a launch in one call.
	launched := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns", `{"name":"Now","agent_id":"`+w.agentID+`","deployment_id":"`+w.deploymentID+
		`","first_message":"Hello","audience":{"tags":["x"]},"schedule":{"start_at":"2999-01-01T00:00:00Z"}}`, 201))
	require.Equal(t, "scheduled", launched.Status)
	resp, raw = b.do(t, http.MethodPost, "/api/campaigns", "Bearer "+member, `{"name":"Member launch"}`)
	require.Equal(t, "role_not_allowed", errorOf(t, resp, raw, 403).codeOrEmpty(), "a launch needs campaigns.start")
}

// buyNumber buys a US number through the REST route: the purchase parks, and its code
// confirms it.
func (b *testBundle) buyNumber(t *testing.T) map[string]any {
	t.Helper()
	return b.buy(t, `{"phone_number":"+14155550100","country":"US","confirm_price":115}`)
}

// buy parks a purchase of the body and confirms it, returning the number bought.
func (b *testBundle) buy(t *testing.T, body string) map[string]any {
	t.Helper()
	parked := decode[map[string]any](t, b.send(t, http.MethodPost, "/api/phone-numbers", body, http.StatusAccepted))
	done := decode[map[string]any](t, b.send(t, http.MethodPost, "/api/confirmations/"+parked["id"].(string), `{"code":"`+parked["code"].(string)+`"}`, 200))
	return done["result"].(map[string]any)
}

// TestCampaignRunsThroughTheJobQueue: who is messaged, once, across processes, and how a
// paused campaign resumes are package campaigns' tests; here, the routes' shapes and the
// process's job queue working a launched campaign to completion.
func TestCampaignRunsThroughTheJobQueue(t *testing.T) {
	t.Parallel()
	w := newCampaignWorld(t, func(o *setupOpts) { o.campaignPeriod = 300 * time.Millisecond })
	b := w.b
	b.accept(t, compliance.DefaultVersion)
	b.buyNumber(t)
	b.newContact(t, `{"name":"Ca","phone":"+14155550200","tags":["promo"],"consent_sms":true}`)
	b.newContact(t, `{"name":"Cb","phone":"+14155550201","tags":["promo"],"consent_sms":true}`)
	b.newContact(t, `{"name":"No consent","phone":"+14155550300","tags":["promo"]}`)

	c := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns", `{"name":"Promo","agent_id":"`+w.agentID+`","deployment_id":"`+w.deploymentID+
		`","first_message":"Spring sale!","audience":{"tags":["promo"]},"schedule":{"rate_per_minute":2}}`, 201))
	require.Equal(t, "running", c.Status)
	get := func() campaignView {
		return decode[campaignView](t, b.send(t, http.MethodGet, "/api/campaigns/"+c.ID, "", 200))
	}
	require.Eventually(t, func() bool { return get().Status == "completed" }, 60*time.Second, 50*time.Millisecond)
	final := get()
	require.Equal(t, [3]int{2, 0, 1}, [3]int{final.Counts.Sent, final.Counts.Failed, final.Counts.Skipped}, "sent, failed, skipped")
	require.Len(t, w.sms.Messages(), 2)
	b.fail(t, http.MethodPost, "/api/campaigns/"+c.ID+"/start", "", 409)
	b.fail(t, http.MethodPatch, "/api/campaigns/"+c.ID, `{"name":"Too late"}`, 409)

	// Pause and start again, on a campaign that waits for its start.
	later := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns", `{"name":"Later","agent_id":"`+w.agentID+`","deployment_id":"`+w.deploymentID+
		`","first_message":"Hi","audience":{"tags":["promo"]},"schedule":{"start_at":"2999-01-01T00:00:00Z"}}`, 201))
	paused := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns/"+later.ID+"/pause", "", 200))
	require.Equal(t, "paused", paused.Status)
	require.Equal(t, "user", str(paused.PausedReason))
	b.fail(t, http.MethodPatch, "/api/campaigns/"+later.ID, `{"draft":true}`, 400)
	b.send(t, http.MethodPatch, "/api/campaigns/"+later.ID, `{"first_message":"Hi again"}`, 200)
	resumed := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns/"+later.ID+"/start", "", 200))
	require.Equal(t, "scheduled", resumed.Status)
	require.Nil(t, resumed.PausedReason)
}

func TestDisablingTheAgentPausesItsCampaigns(t *testing.T) {
	t.Parallel()
	w := newCampaignWorld(t)
	b := w.b
	b.accept(t, compliance.DefaultVersion)
	b.buyNumber(t)
	c := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns", `{"name":"Later","agent_id":"`+w.agentID+`","deployment_id":"`+w.deploymentID+
		`","first_message":"Hi","audience":{"tags":["x"]},"schedule":{"start_at":"2999-01-01T00:00:00Z"}}`, 201))
	require.Equal(t, "scheduled", c.Status)
	b.send(t, http.MethodPatch, "/api/agents/"+w.agentID, `{"status":"disabled"}`, 200)
	paused := decode[campaignView](t, b.send(t, http.MethodGet, "/api/campaigns/"+c.ID, "", 200))
	require.Equal(t, "paused", paused.Status)
	require.Equal(t, "agent_disabled", str(paused.PausedReason))
	resp, raw := b.do2(t, http.MethodPost, "/api/campaigns/"+c.ID+"/start", "")
	require.Equal(t, "agent_disabled", errorOf(t, resp, raw, 409).codeOrEmpty(), "a disabled agent runs no campaigns")
	cancelled := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns/"+c.ID+"/cancel", "", 200))
	require.Equal(t, "cancelled", cancelled.Status)
	resp, raw = b.do2(t, http.MethodPost, "/api/campaigns/"+c.ID+"/pause", "")
	require.Equal(t, "invalid_transition", errorOf(t, resp, raw, 409).codeOrEmpty())
}

// TestPhoneNumbersSearchBuyAndRelease: the prices, the charge and the release are package
// phonenumbers' tests; here, each route's shape and statuses, and the purchase parked until
// its code confirms it.
func TestPhoneNumbersSearchBuyAndRelease(t *testing.T) {
	t.Parallel()
	w := newCampaignWorld(t)
	b := w.b
	offers := decode[struct {
		Data []struct {
			PhoneNumber string `json:"phone_number"`
			Credits     int    `json:"monthly_price_credits"`
		}
	}](t, b.send(t, http.MethodGet, "/api/phone-numbers/available?country=US&area_code=415", "", 200))
	require.Len(t, offers.Data, 2)
	require.Equal(t, 115, offers.Data[0].Credits)

	resp, raw := b.do2(t, http.MethodGet, "/api/phone-numbers/available?country=DE", "")
	require.Equal(t, "regulatory_bundle_required", errorOf(t, resp, raw, 422).codeOrEmpty())
	resp, raw = b.do2(t, http.MethodPost, "/api/phone-numbers", `{"phone_number":"+4930123456","country":"DE","confirm_price":100}`)
	require.Equal(t, "regulatory_bundle_required", errorOf(t, resp, raw, 422).codeOrEmpty())
	resp, raw = b.do2(t, http.MethodPost, "/api/phone-numbers", `{"phone_number":"+14155550100","country":"US","confirm_price":100}`)
	require.Equal(t, "price_mismatch", errorOf(t, resp, raw, 409).codeOrEmpty())
	member := b.newKey(t, b.workspace, "member")
	resp, raw = b.do(t, http.MethodPost, "/api/phone-numbers", "Bearer "+member, `{"phone_number":"+14155550100","country":"US","confirm_price":115}`)
	require.Equal(t, "role_not_allowed", errorOf(t, resp, raw, 403).codeOrEmpty())
	require.Empty(t, w.sms.Bought())

	capped := int64(1_000_000_000) // $1.00, under the number's $1.15
	_, err := b.store.SetMonthlyCapByID(context.Background(), b.workspace.ID, &capped)
	require.NoError(t, err)
	e := b.fail(t, http.MethodPost, "/api/phone-numbers", `{"phone_number":"+14155550100","country":"US","confirm_price":115}`, 403)
	require.Contains(t, e.Message, "monthly spend cap")
	_, err = b.store.SetMonthlyCapByID(context.Background(), b.workspace.ID, nil)
	require.NoError(t, err)
	require.Empty(t, w.sms.Bought())

	n := b.buyNumber(t)
	require.Equal(t, "active", n["status"])
	require.Equal(t, []string{"+14155550100"}, w.sms.Bought())

	released := decode[map[string]any](t, b.send(t, http.MethodDelete, "/api/phone-numbers/"+n["id"].(string), "", 200))
	require.Equal(t, "released", released["status"])
	require.Len(t, w.sms.Released(), 1)
	list := decode[struct{ Data []map[string]any }](t, b.send(t, http.MethodGet, "/api/phone-numbers?status=active", "", 200))
	require.Empty(t, list.Data)
}

func TestPhoneNumbersWithoutAProviderSayHowToConfigureOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, raw := b.do2(t, http.MethodGet, "/api/phone-numbers/available?country=US", "")
	e := errorOf(t, resp, raw, 409)
	require.Equal(t, "sms_provider_not_configured", str(e.Code))
	require.Contains(t, e.Message, "TWILIO_ACCOUNT_SID")
}

// TestAssistantBuysAPhoneNumberOnlyAfterYes: buy_phone_number is a spend tool; the turn parks
// it with the price in the summary, and only `YES <code>` buys, charges and records it.
func TestAssistantBuysAPhoneNumberOnlyAfterYes(t *testing.T) {
	t.Parallel()
	w := newCampaignWorld(t)
	b := w.b
	b.vendors["beta"].Push(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "buy_phone_number", Arguments: json.RawMessage(`{"phone_number":"+14155550101","country":"US"}`)}}},
		llmtest.Reply{Text: "Confirm to buy it."},
	)
	type chatReply struct {
		ConversationID string `json:"conversation_id"`
		Reply          string `json:"reply"`
		PendingActions []struct {
			Code    string `json:"code"`
			Summary string `json:"summary"`
		} `json:"pending_actions"`
	}
	first := decode[chatReply](t, b.send(t, http.MethodPost, "/api/chat", `{"message":"buy me a 415 number","model":"beta-5.4"}`, 200))
	require.Len(t, first.PendingActions, 1)
	require.Contains(t, first.PendingActions[0].Summary, "115 credits")
	require.Contains(t, first.PendingActions[0].Summary, "+14155550101")
	require.Empty(t, w.sms.Bought(), "parked, not bought")
	require.Empty(t, phoneSpend(b.events(t, "spend.recorded")))
	requested := b.events(t, "confirmation.requested")
	require.Len(t, requested, 1)

	before := b.balance(t)
	second := decode[chatReply](t, b.send(t, http.MethodPost, "/api/chat",
		`{"message":"YES `+first.PendingActions[0].Code+`","conversation_id":"`+first.ConversationID+`","model":"beta-5.4"}`, 200))
	require.Contains(t, second.Reply, "Done")
	require.Equal(t, []string{"+14155550101"}, w.sms.Bought())
	require.Equal(t, before-1_150_000_000, b.balance(t), "the confirming YES is answered by the platform, not the model: only the number is charged")
	spend := phoneSpend(b.events(t, "spend.recorded"))
	require.Len(t, spend, 1)
	require.Equal(t, "+14155550101", spend[0].Data["phone_number"])
	resolved := b.events(t, "confirmation.resolved")
	require.Len(t, resolved, 1)
	require.Equal(t, "approved", resolved[0].Data["resolution"])
	list := decode[struct{ Data []map[string]any }](t, b.send(t, http.MethodGet, "/api/phone-numbers", "", 200))
	require.Len(t, list.Data, 1)
}

func phoneSpend(events []storedEvent) []storedEvent {
	var out []storedEvent
	for _, e := range events {
		if e.Data["category"] == "phone_number" {
			out = append(out, e)
		}
	}
	return out
}

// campaignProbes are the role probes of the contacts, campaigns and phone-number routes
// (TestPermissionTableOnEverySurface); each makes what it acts on with the owner's key.
func (b *testBundle) campaignProbes() []probe {
	api := func(method string, path func(t *testing.T) string, body string) func(*testing.T, string) outcome {
		return func(t *testing.T, key string) outcome { return b.viaHTTP(t, method, path(t), key, body) }
	}
	fixed := func(p string) func(*testing.T) string { return func(*testing.T) string { return p } }
	contact := func(suffix string) func(t *testing.T) string {
		return func(t *testing.T) string {
			return "/api/contacts/" + b.newContact(t, `{"email":"probe-`+uuid.NewString()[:8]+`@example.com"}`).ID + suffix
		}
	}
	campaign := func(suffix string) func(t *testing.T) string {
		return func(t *testing.T) string {
			c := decode[campaignView](t, b.send(t, http.MethodPost, "/api/campaigns", `{"name":"Probe","draft":true}`, http.StatusCreated))
			return "/api/campaigns/" + c.ID + suffix
		}
	}
	csv := func(t *testing.T, key string) outcome {
		var body bytes.Buffer
		w := multipart.NewWriter(&body)
		part, err := w.CreateFormFile("file", "contacts.csv")
		require.NoError(t, err)
		_, _ = part.Write([]byte("name,email\nAda,ada-" + uuid.NewString()[:8] + "@example.com\n"))
		require.NoError(t, w.Close())
		return b.viaRaw(t, http.MethodPost, "/api/contacts/import", key, w.FormDataContentType(), body.String())
	}
	return []probe{
		{"listContacts", "viewer", api(http.MethodGet, fixed("/api/contacts"), "")},
		{"createContact", "member", api(http.MethodPost, fixed("/api/contacts"), `{"name":"Probe","phone":"+14155550999"}`)},
		{"importContacts", "member", csv},
		{"getContact", "viewer", api(http.MethodGet, contact(""), "")},
		{"updateContact", "member", api(http.MethodPatch, contact(""), `{"tags":["probed"]}`)},
		{"deleteContact", "member", api(http.MethodDelete, contact(""), "")},
		{"restoreContact", "member", api(http.MethodPost, contact("/restore"), "")},
		{"listContactLists", "viewer", api(http.MethodGet, fixed("/api/contact-lists"), "")},
		{"listCampaigns", "viewer", api(http.MethodGet, fixed("/api/campaigns"), "")},
		{"createCampaign", "member", api(http.MethodPost, fixed("/api/campaigns"), `{"name":"Probe draft","draft":true}`)},
		{"getCampaign", "viewer", api(http.MethodGet, campaign(""), "")},
		{"updateCampaign", "member", api(http.MethodPatch, campaign(""), `{"name":"Renamed probe"}`)},
		// Not accepted in this workspace: allowed roles meet the gate (409), others 403 first.
		{"startCampaign", "admin", func(t *testing.T, key string) outcome {
			resp, raw := b.do(t, http.MethodPost, campaign("/start")(t), "Bearer "+key, "")
			if resp.StatusCode == http.StatusConflict {
				requireGate(t, resp, raw)
				return outcome{status: resp.StatusCode, code: "outbound_compliance_required"}
			}
			return outcome{status: resp.StatusCode, code: errorOf(t, resp, raw, resp.StatusCode).codeOrEmpty()}
		}},
		{"pauseCampaign", "admin", api(http.MethodPost, campaign("/pause"), "")},
		{"cancelCampaign", "admin", api(http.MethodPost, campaign("/cancel"), "")},
		// No SMS provider in this bundle: allowed roles get 409 sms_provider_not_configured.
		{"listPhoneNumbers", "viewer", api(http.MethodGet, fixed("/api/phone-numbers"), "")},
		{"searchPhoneNumbers", "viewer", api(http.MethodGet, fixed("/api/phone-numbers/available?country=US"), "")},
		{"buyPhoneNumber", "admin", api(http.MethodPost, fixed("/api/phone-numbers"), `{"phone_number":"+14155550100","country":"US","confirm_price":115}`)},
		// An unknown action is 404 for every role; the parked tool's own permission is
		// checked once one is found.
		{"listConfirmations", "viewer", api(http.MethodGet, fixed("/api/confirmations"), "")},
		{"confirmPendingAction", "viewer", api(http.MethodPost, fixed("/api/confirmations/act_nope"), `{"code":"123456"}`)},
		{"releasePhoneNumber", "admin", api(http.MethodDelete, fixed("/api/phone-numbers/"+uuid.NewString()), "")},
		// Bulk over REST: cancel_campaigns runs at once; an unknown run and an unknown action
		// are 404 for the roles allowed (confirming checks the tool's own permission too).
		{"runBulkTool", "admin", api(http.MethodPost, fixed("/api/bulk/cancel_campaigns"), `{"filter":{"status":"paused"}}`)},
		{"getBulkRun", "admin", api(http.MethodGet, fixed("/api/bulk/runs/bulk_nope"), "")},
		{"confirmAction", "viewer", api(http.MethodPost, fixed("/api/actions/act_nope/confirm"), `{"code":"123456"}`)},
	}
}

// campaignRefs makes the contacts, campaigns and phone numbers the fuzz seeds act on, and
// returns their `$` names and ids: the compliance acknowledgment is accepted, a campaign
// agent (not the seeds' $agent, which a seed disables) has an sms deployment, and two
// numbers are bought (one stays, one is released by a seed).
func campaignRefs(t testing.TB, b *testBundle, auth string, decode func(method, path, contentType, body string, into any)) []string {
	t.Helper()
	ctx := context.Background()
	u, err := b.store.CreateUser(ctx, b.workspace.ID, "fuzz-owner@example.com", "owner", tokenSum(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	_, err = b.store.AcceptCompliance(ctx, b.workspace.ID, compliance.DefaultVersion, u.ID, u.Email, "owner")
	require.NoError(t, err)
	var ref struct {
		ID      string `json:"id"`
		AgentID string `json:"agentId"`
	}
	id := func(method, path, contentType, body string) string {
		ref.ID, ref.AgentID = "", ""
		decode(method, path, contentType, body, &ref)
		if ref.ID == "" {
			return ref.AgentID
		}
		return ref.ID
	}
	contact := id(http.MethodPost, "/api/contacts", "application/json", `{"name":"Ada","phone":"+14155550101","tags":["vip"],"consent_sms":true}`)
	doomed := id(http.MethodPost, "/api/contacts", "application/json", `{"email":"doomed@example.com"}`)
	deleted := id(http.MethodPost, "/api/contacts", "application/json", `{"email":"deleted@example.com"}`)
	id(http.MethodDelete, "/api/contacts/"+deleted, "application/json", "")
	buy := func(body string) string {
		var parked struct{ ID, Code string }
		decode(http.MethodPost, "/api/phone-numbers", "application/json", body, &parked)
		var done struct{ Result struct{ ID string } }
		decode(http.MethodPost, "/api/confirmations/"+parked.ID, "application/json", `{"code":"`+parked.Code+`"}`, &done)
		return done.Result.ID
	}
	buy(`{"phone_number":"+14155550100","country":"US","confirm_price":115}`)
	phone := buy(`{"phone_number":"+14155550101","country":"US","confirm_price":115}`)
	var purchase struct{ ID, Code string } // a parked purchase, for POST /api/confirmations/{id}
	decode(http.MethodPost, "/api/phone-numbers", "application/json", `{"phone_number":"+14155550104","country":"US"}`, &purchase)
	agentID := id(http.MethodPost, "/api/agents", "application/yaml", agentYAML("Campaign agent"))
	d, err := b.store.DeployAgent(ctx, b.workspace.ID, store.Deploy{AgentID: uuid.MustParse(agentID), ChannelType: "sms", Config: json.RawMessage(`{}`)})
	require.NoError(t, err)
	ready := `{"name":"Ready","draft":true,"agent_id":"` + agentID + `","deployment_id":"` + d.ID.String() +
		`","first_message":"Hi!","audience":{"contact_ids":["` + contact + `"]},"schedule":{"start_at":"2999-01-01T00:00:00Z"}}`
	campaign := id(http.MethodPost, "/api/campaigns", "application/json", `{"name":"Draft","draft":true}`)
	startable := id(http.MethodPost, "/api/campaigns", "application/json", ready)
	scheduled := id(http.MethodPost, "/api/campaigns", "application/json", strings.Replace(ready, `"draft":true`, `"draft":false`, 1))
	cancellable := id(http.MethodPost, "/api/campaigns", "application/json", `{"name":"Doomed","draft":true}`)
	// A bulk run (cancel_campaigns of a scheduled campaign) and a parked bulk action.
	bulkCancelled := id(http.MethodPost, "/api/campaigns", "application/json", strings.Replace(ready, `"draft":true`, `"draft":false`, 1))
	var done struct{ Affected int }
	decode(http.MethodPost, "/api/bulk/cancel_campaigns", "application/json", `{"ids":["`+bulkCancelled+`"]}`, &done)
	require.Equal(t, 1, done.Affected)
	var run string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT short_id FROM bulk_runs WHERE workspace_id = $1 ORDER BY created_at DESC LIMIT 1`, b.workspace.ID).Scan(&run))
	bulkDoomed := id(http.MethodPost, "/api/contacts", "application/json", `{"email":"bulk-doomed@example.com"}`)
	var parked struct {
		ActionID string `json:"action_id"`
		Code     string `json:"code"`
	}
	decode(http.MethodPost, "/api/bulk/delete_contacts", "application/json", `{"ids":["`+bulkDoomed+`"]}`, &parked)
	require.NotEmpty(t, parked.ActionID)
	return []string{"$contact", contact, "$doomedContact", doomed, "$deletedContact", deleted, "$campaign", campaign, "$startable", startable,
		"$scheduled", scheduled, "$cancellable", cancellable, "$phone", phone, "$bulkRun", run, "$bulkAction", parked.ActionID, "$bulkCode", parked.Code,
		"$buyAction", purchase.ID, "$buyCode", purchase.Code}
}

// A contact an agent collected (a freely typed phone, source conversation) is linked to its
// conversation and managed through /api/contacts (the rules of its fields: package contacts).
func TestAContactAnAgentCollectedCanBeManaged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agentID := b.newAgent(t, "Front desk")
	b.vendors["beta"].Push(llmtest.Reply{Text: "Thanks!"})
	b.vendors["alpha"].Push(llmtest.Reply{Text: "Thanks!"})
	b.vendors["gamma"].Push(llmtest.Reply{Text: "Thanks!"})
	raw := b.send(t, http.MethodPost, "/api/agents/"+agentID+"/chat", `{"message":"hi","contact":{"name":"Walk-in","phone":"555 010 2030"}}`, 200)
	conv := decode[struct {
		ConversationID string `json:"conversation_id"`
	}](t, raw)
	created := b.events(t, "conversation.created")
	require.Len(t, created, 1)
	require.Equal(t, conv.ConversationID, created[0].Data["conversation_id"])
	contactID, _ := created[0].Data["contact_id"].(string)
	require.NotEmpty(t, contactID, "the conversation links its contact")

	c := decode[contactView](t, b.send(t, http.MethodGet, "/api/contacts/"+contactID, "", 200))
	require.Equal(t, "conversation", c.Source)
	require.Equal(t, "555 010 2030", *c.Phone, "kept as typed")
	c = decode[contactView](t, b.send(t, http.MethodPatch, "/api/contacts/"+contactID, `{"tags":["walk-in"]}`, 200))
	require.Equal(t, "555 010 2030", *c.Phone, "a change of its tags keeps it")
}
