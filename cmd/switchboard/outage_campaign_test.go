package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/apikey"
	"switchboard/compliance"
	"switchboard/llm/llmtest"
	"switchboard/sms/smstest"
	"switchboard/store"
)

// TestPostgresOutageMidCampaignSendsEveryContactOnce: an SMS campaign is sending (the carrier
// takes 300 ms a message) when PostgreSQL goes away for 5 s. Once it is back the campaign goes
// on by itself and completes: every contact got exactly one message, every send is recorded
// `sent` with the carrier's id, counted and charged once, including the one the carrier took
// while the database was gone. A text that comes in during the outage is refused with 503 and
// Retry-After, and the carrier's retry after it is stored once.
func TestPostgresOutageMidCampaignSendsEveryContactOnce(t *testing.T) {
	t.Parallel()
	pg := startCluster(t)
	carrier := smstest.New(t)
	carrier.AddNumber("+14155550100")
	carrier.SetDelay(300 * time.Millisecond)
	key, _, _ := apikey.New()
	env := processEnv(t, llmtest.NewAnthropic(t), key)
	env["DATABASE_URL"] = pg.url()
	env["SECRETS_KEY"] = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	env["TWILIO_ACCOUNT_SID"], env["TWILIO_AUTH_TOKEN"], env["TWILIO_BASE_URL"] = smstest.AccountSID, smstest.AuthToken, carrier.URL
	p := startServe(t, env)
	acceptCompliance(t, pg.url())

	must := func(method, path, body string, want int) map[string]any {
		t.Helper()
		status, _, raw := call(p.base, key, method, path, body)
		require.Equal(t, want, status, "%s %s: %s", method, path, raw)
		var out map[string]any
		require.NoError(t, json.Unmarshal(raw, &out))
		return out
	}
	agentYAML := "agent:\n  name: Outbound\n  language: en\n  persona:\n    display_name: Ada\n    tone: friendly\n    greeting: Hi, this is Ada.\n" +
		"  llm:\n    provider: alpha\n    model: alpha-sonnet-4-6\n    temperature: 0.3\n    max_tokens: 200\n    system_prompt: You follow up on orders.\n"
	body, _ := json.Marshal(map[string]string{"yaml": agentYAML})
	agentID := must(http.MethodPost, "/api/agents", string(body), http.StatusCreated)["agentId"].(string)
	channel := must(http.MethodPost, "/api/channels", `{"provider":"sms","name":"Sales line","config":{"phone_number":"+14155550100"}}`, http.StatusCreated)
	require.Equal(t, "connected", channel["status"], "%v", channel)
	deployed := must(http.MethodPost, "/api/agents/"+agentID+"/deployments", `{"channel":"sms","channel_id":"`+channel["id"].(string)+`"}`, http.StatusCreated)
	const contacts = 12
	for i := range contacts {
		must(http.MethodPost, "/api/contacts", fmt.Sprintf(`{"name":"C%d","phone":"+1415555%04d","tags":["promo"],"consent_sms":true}`, i, 200+i), http.StatusCreated)
	}
	campaign := must(http.MethodPost, "/api/campaigns", `{"name":"Spring","agent_id":"`+agentID+`","deployment_id":"`+deployed["deploymentId"].(string)+
		`","first_message":"Spring sale: 20% off this week.","audience":{"tags":["promo"]},"schedule":{"rate_per_minute":600}}`, http.StatusCreated)
	require.Equal(t, "running", campaign["status"])

	carrier.WaitMessages(t, 3, 30*time.Second) // sending, one every 300 ms
	pg.stop(t)
	// A text that arrives meanwhile is refused with a 503 and Retry-After, so the carrier
	// retries it; once the database is back the retry is taken, and stored once.
	inbound, err := url.Parse(channel["inbound_url"].(string))
	require.NoError(t, err)
	text := smstest.InboundForm("+14155559999", "+14155550100", "Is the sale on shoes too?", "")
	post := func() *http.Response {
		resp, err := smstest.PostWithSignature(context.Background(), nil, p.base+inbound.Path, text, carrier.Sign(inbound.String(), text))
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	refused := post()
	require.Equal(t, http.StatusServiceUnavailable, refused.StatusCode)
	require.NotEmpty(t, refused.Header.Get("Retry-After"))
	time.Sleep(5 * time.Second)
	pg.start(t)
	require.Eventually(t, func() bool { return post().StatusCode == http.StatusOK }, 10*time.Second, 100*time.Millisecond,
		"the carrier's retry is taken once the database is back")
	require.Equal(t, 1, countRows(t, pg.url(), `SELECT count(*) FROM channel_messages WHERE provider_message_id = '`+text.Get("MessageSid")+`'`))

	require.Eventually(t, func() bool {
		status, _, raw := call(p.base, key, http.MethodGet, "/api/campaigns/"+campaign["id"].(string), "")
		var c map[string]any
		return status == http.StatusOK && json.Unmarshal(raw, &c) == nil && c["status"] == "completed"
	}, 90*time.Second, 100*time.Millisecond, "the campaign completes after the outage")
	final := must(http.MethodGet, "/api/campaigns/"+campaign["id"].(string), "", http.StatusOK)
	counts := final["counts"].(map[string]any)
	require.Equal(t, []any{float64(contacts), float64(0), float64(0)}, []any{counts["sent"], counts["failed"], counts["skipped"]}, "sent, failed, skipped: %v", counts)

	perPhone := map[string]int{}
	for _, m := range carrier.Messages() {
		if m.Body == "Spring sale: 20% off this week." { // not the agent's answer to the text
			perPhone[m.To]++
		}
	}
	require.Len(t, perPhone, contacts, "every contact was messaged")
	for phone, n := range perPhone {
		require.Equal(t, 1, n, "%s was messaged once", phone)
	}
	require.Equal(t, contacts, countRows(t, pg.url(), `SELECT count(*) FROM campaign_sends WHERE status = 'sent' AND provider_message_id IS NOT NULL`),
		"every send is recorded with the carrier's id")
	require.Equal(t, contacts, countRows(t, pg.url(), `SELECT count(*) FROM ledger l JOIN campaign_sends s ON s.conversation_id = l.conversation_id WHERE l.category = 'sms'`),
		"each campaign message charged once")
}

// acceptCompliance records the workspace owner's acceptance of the outbound compliance terms,
// which only the dashboard's Settings page takes (no route for a key).
func acceptCompliance(t *testing.T, databaseURL string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, databaseURL)
	require.NoError(t, err)
	defer st.Close()
	var ws uuid.UUID
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT id FROM workspaces ORDER BY created_at LIMIT 1`).Scan(&ws))
	sum := sha256.Sum256([]byte(uuid.NewString()))
	u, err := st.CreateUser(ctx, ws, "owner@example.com", "owner", sum[:], time.Now().Add(time.Hour))
	require.NoError(t, err)
	_, err = st.AcceptCompliance(ctx, ws, compliance.DefaultVersion, u.ID, u.Email, "owner")
	require.NoError(t, err)
}
