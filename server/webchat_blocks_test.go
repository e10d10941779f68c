package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/llm/llmtest"
	"switchboard/store"
)

// webchatVisitor opens a webchat conversation as a visitor and returns their token and their
// visitor id (the `mc-` id of the conversation, as the dashboard lists it).
func (b *testBundle) webchatVisitor(t *testing.T, dep string) (token, visitorID string) {
	t.Helper()
	b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "Guten Tag."})
	resp, raw := b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "", `{"message":"Hallo"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var r webchatReply
	require.NoError(t, json.Unmarshal(raw, &r))
	require.NoError(t, b.store.Pool().QueryRow(context.Background(),
		`SELECT short_id FROM conversations WHERE workspace_id = $1 AND channel = 'webchat' ORDER BY created_at DESC LIMIT 1`, b.workspace.ID).Scan(&visitorID))
	return r.VisitorToken, visitorID
}

func TestWebchatBlockVisitor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, dep := b.deployWebchat(t, `{}`)
	token, visitor := b.webchatVisitor(t, dep)
	auth := "Bearer " + b.key

	resp, raw := b.do(t, http.MethodPost, "/api/webchat/blocked-visitors", auth, `{"visitor_id":"`+visitor+`","reason":" Spam links "}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var block struct {
		VisitorID string `json:"visitor_id"`
		Reason    string `json:"reason"`
	}
	require.NoError(t, json.Unmarshal(raw, &block))
	require.Equal(t, visitor, block.VisitorID)
	require.Equal(t, "Spam links", block.Reason)
	resp, raw = b.do(t, http.MethodPost, "/api/webchat/blocked-visitors", auth, `{"visitor_id":"`+visitor+`","reason":"again"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "blocking again answers the block as it was: "+string(raw))
	require.Contains(t, string(raw), "Spam links")

	// The visitor's messages are refused, with a message for the widget and no model call
	// (nothing is queued on the fake vendor: a call would fail the test).
	resp, raw = b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "https://shop.example", `{"message":"Noch da?","visitor_token":"`+token+`"}`)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, string(raw))
	require.Equal(t, "visitor_blocked", webchatErrorCode(t, raw))
	require.Contains(t, string(raw), "This chat is not available to you.")
	require.Equal(t, "https://shop.example", resp.Header.Get("Access-Control-Allow-Origin"), "the widget can read the refusal")
	// Another visitor is not affected.
	other, otherVisitor := b.webchatVisitor(t, dep)
	require.NotEqual(t, visitor, otherVisitor)
	require.NotEmpty(t, other)

	// Any role lists the blocks; a member may block, a viewer may not.
	resp, raw = b.do(t, http.MethodGet, "/api/webchat/blocked-visitors", "Bearer "+b.newKey(t, b.workspace, "viewer"), "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var list struct {
		BlockedVisitors []struct {
			VisitorID string `json:"visitor_id"`
		} `json:"blocked_visitors"`
	}
	require.NoError(t, json.Unmarshal(raw, &list))
	require.Len(t, list.BlockedVisitors, 1)
	require.Equal(t, visitor, list.BlockedVisitors[0].VisitorID)

	// Refusals name the field and write nothing.
	for body, want := range map[string]struct {
		status int
		code   string
	}{
		`{"visitor_id":"mc-nosuchvisitor"}`: {http.StatusNotFound, "conversation_not_found"},
		`{"visitor_id":"nope"}`:             {http.StatusBadRequest, ""},
		`{}`:                                {http.StatusBadRequest, ""},
	} {
		resp, raw = b.do(t, http.MethodPost, "/api/webchat/blocked-visitors", auth, body)
		require.Equal(t, want.status, resp.StatusCode, body+": "+string(raw))
		if want.code != "" {
			require.Equal(t, want.code, webchatErrorCode(t, raw))
		}
		require.Contains(t, string(raw), "visitor_id", "the error names the field")
	}
	// A conversation of another channel is no webchat visitor.
	_, err := b.store.Pool().Exec(context.Background(), `INSERT INTO conversations (workspace_id, short_id, channel) VALUES ($1, 'mc-apiconversation', 'api')`, b.workspace.ID)
	require.NoError(t, err)
	resp, raw = b.do(t, http.MethodPost, "/api/webchat/blocked-visitors", auth, `{"visitor_id":"mc-apiconversation"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(raw))
	require.Equal(t, "not_webchat", webchatErrorCode(t, raw))
	// Another workspace cannot see or block this one's visitors.
	stranger, err := b.store.CreateWorkspace(context.Background(), "stranger", 1_000_000_000)
	require.NoError(t, err)
	strangerAuth := "Bearer " + b.newKey(t, stranger, "owner")
	resp, raw = b.do(t, http.MethodPost, "/api/webchat/blocked-visitors", strangerAuth, `{"visitor_id":"`+otherVisitor+`"}`)
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(raw))
	resp, raw = b.do(t, http.MethodDelete, "/api/webchat/blocked-visitors/"+visitor, strangerAuth, "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(raw))
	require.Equal(t, 1, b.count(t, "webchat_blocked_visitors"))

	// Lifting the block lets the visitor chat again.
	resp, raw = b.do(t, http.MethodDelete, "/api/webchat/blocked-visitors/"+visitor, auth, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	resp, raw = b.do(t, http.MethodDelete, "/api/webchat/blocked-visitors/"+visitor, auth, "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, string(raw))
	require.Equal(t, "blocked_visitor_not_found", webchatErrorCode(t, raw))
	b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "Ja."})
	resp, raw = b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "", `{"message":"Noch da?","visitor_token":"`+token+`"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
}

// A workspace whose monthly spend cap is reached takes no webchat message: the bootstrap says
// the chat is paused, and a message is 403 insufficient_quota with no model call.
func TestWebchatSpendCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, dep := b.deployWebchat(t, `{}`)
	_, err := b.store.Pool().Exec(context.Background(),
		`UPDATE workspaces SET monthly_cap_nano_usd = 1000, month_spend_nano_usd = 1000 WHERE id = $1`, b.workspace.ID)
	require.NoError(t, err)

	resp, raw := b.public(t, http.MethodGet, "/embed/"+dep+"/config", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var boot struct {
		Available bool    `json:"available"`
		Reason    *string `json:"unavailable_reason"`
	}
	require.NoError(t, json.Unmarshal(raw, &boot))
	require.False(t, boot.Available)
	require.NotNil(t, boot.Reason)
	require.Contains(t, *boot.Reason, "paused")
	require.NotContains(t, string(raw), "$", "visitors see no amounts")

	resp, raw = b.public(t, http.MethodPost, "/embed/"+dep+"/chat", "", `{"message":"Hallo"}`)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, string(raw))
	require.Equal(t, "insufficient_quota", webchatErrorCode(t, raw))
	require.Equal(t, 0, b.count(t, "conversations"))

	// A cap not yet reached: available again.
	_, err = b.store.Pool().Exec(context.Background(), `UPDATE workspaces SET monthly_cap_nano_usd = 5000 WHERE id = $1`, b.workspace.ID)
	require.NoError(t, err)
	resp, raw = b.public(t, http.MethodGet, "/embed/"+dep+"/config", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), `"available":true`)
}

// Visitor tokens are signed with a key derived from SECRETS_KEY: a process started later (a
// restart, another replica) with the same key continues the visitor's conversation.
func TestWebchatTokenOutlivesTheProcess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, dep := b.deployWebchat(t, `{}`)
	token, _ := b.webchatVisitor(t, dep)

	pool, err := pgxpool.New(context.Background(), b.store.Pool().Config().ConnString())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, url := startApp(t, store.New(pool).WithSecrets(b.store.Secrets()), b.opts, b.families)
	other := &testBundle{url: url, client: b.client}
	b.vendors[catalog.Beta].Push(llmtest.Reply{Text: "Immer noch hier."})
	resp, raw := other.public(t, http.MethodPost, "/embed/"+dep+"/chat", "", `{"message":"Und jetzt?","visitor_token":"`+token+`"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Equal(t, 1, b.count(t, "conversations"), "the same conversation")
}
