package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/erasure"
)

type erasureReport struct {
	ContactID string `json:"contact_id"`
	Tables    []struct {
		Table string `json:"table"`
		Rows  int    `json:"rows"`
	} `json:"tables"`
	TotalRows int `json:"total_rows"`
}

func (r erasureReport) rows(table string) int {
	for _, t := range r.Tables {
		if t.Table == table {
			return t.Rows
		}
	}
	return -1
}

// TestEraseContact: a contact who talked with an agent is erased; the counts of rows before
// and after show its words gone, its events tombstoned with their cursors kept, its metering
// rows kept without the link; a second erasure finds nothing; another contact is untouched.
func TestEraseContact(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agentID := b.newAgent(t, "Desk")
	talk := func(name, email string) (conv, contact string) {
		ans := b.chat(t, agentID, map[string]any{"message": "Hello, I am " + name, "contact": map[string]any{"name": name, "email": email}})
		require.NoError(t, b.store.Pool().QueryRow(context.Background(),
			`SELECT id::text, contact_id::text FROM conversations WHERE short_id = $1`, ans.ConversationID).Scan(&conv, &contact))
		return conv, contact
	}
	evesConv, eve := talk("Eve", "eve@example.com")
	adasConv, _ := talk("Ada", "ada@example.com")

	words := func(conv string) int {
		return b.countWhere(t, `SELECT count(*) FROM messages WHERE conversation_id = $1 AND content <> ''`, conv)
	}
	mentions := func(conv string) int {
		return b.countWhere(t, `SELECT count(*) FROM events e JOIN conversations c ON c.id = $1
			WHERE e.envelope LIKE '%' || c.short_id || '%' AND e.envelope NOT LIKE '%"data":{"erased":true}}'`, conv)
	}
	events, ledger := b.count(t, "events"), b.count(t, "ledger")
	require.Positive(t, words(evesConv))
	require.Positive(t, mentions(evesConv))
	adaWords, adaMentions := words(adasConv), mentions(adasConv)
	evesLedger := b.countWhere(t, `SELECT count(*) FROM ledger WHERE conversation_id = $1`, evesConv)
	require.Positive(t, evesLedger, "the turn was metered")

	r := decode[erasureReport](t, b.send(t, http.MethodPost, "/api/contacts/"+eve+"/erase", "", http.StatusOK))
	require.Equal(t, eve, r.ContactID)
	require.Equal(t, 1, r.rows("contacts"))
	require.Positive(t, r.rows("messages"))
	require.Positive(t, r.rows("events"))
	require.Equal(t, evesLedger, r.rows("ledger"))
	sum := 0
	for _, t := range r.Tables {
		sum += t.Rows
	}
	require.Equal(t, sum, r.TotalRows)

	require.Zero(t, words(evesConv), "Eve's words are gone")
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM events WHERE envelope LIKE '%eve@example.com%' OR envelope LIKE '%Hello, I am Eve%'`))
	require.Equal(t, events, b.count(t, "events"), "every event keeps its cursor")
	require.Equal(t, ledger, b.count(t, "ledger"), "metering rows stay")
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM ledger WHERE conversation_id = $1`, evesConv))
	require.Zero(t, b.countWhere(t, `SELECT count(*) FROM contacts WHERE id = $1 AND (name IS NOT NULL OR email IS NOT NULL OR erased_at IS NULL)`, eve))
	require.Equal(t, adaWords, words(adasConv), "Ada is untouched")
	require.Equal(t, adaMentions, mentions(adasConv))

	again := decode[erasureReport](t, b.send(t, http.MethodPost, "/api/contacts/"+eve+"/erase", "", http.StatusOK))
	require.Zero(t, again.TotalRows, "idempotent: nothing is left")

	e := b.fail(t, http.MethodPost, "/api/contacts/00000000-0000-4000-8000-000000000000/erase", "", http.StatusNotFound)
	require.Equal(t, "contact_not_found", str(e.Code))
}

// TestRetentionSweep: with a retention period, the sweep deletes the conversations whose last
// activity is older, in small batches, tombstones their events, keeps the rest; without one
// nothing goes.
func TestRetentionSweep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	old := b.seedConversations(t, 5, "api")
	fresh := b.seedConversations(t, 2, "api")
	for _, id := range old {
		_, err := b.store.Pool().Exec(ctx, `INSERT INTO messages (workspace_id, conversation_id, seq, role, content) VALUES ($1, $2, 1, 'user', 'old words')`, b.workspace.ID, id)
		require.NoError(t, err)
	}
	_, err := b.store.Pool().Exec(ctx, `UPDATE conversations SET updated_at = now() - interval '40 days' WHERE id = ANY($1::uuid[])`, old)
	require.NoError(t, err)

	// The server's own daily sweep runs once at start (RunOnStart, once River has a leader):
	// it must be done before the retention is set, or it deletes some of them first.
	require.Eventually(t, func() bool {
		return b.countWhere(t, `SELECT count(*) FROM river_job WHERE kind = 'retention_sweep' AND state = 'completed'`) > 0
	}, 60*time.Second, 20*time.Millisecond, "the start-up sweep ran")
	swept, err := erasure.Sweep(ctx, b.store, 2)
	require.NoError(t, err)
	require.Zero(t, swept.Conversations, "keep is the default")
	require.Equal(t, 7, b.count(t, "conversations"))

	got := decode[map[string]any](t, b.send(t, http.MethodPut, "/api/retention", `{"retention_days":30}`, http.StatusOK))
	require.Equal(t, float64(30), got["retention_days"])
	b.fail(t, http.MethodPut, "/api/retention", `{"retention_days":0}`, http.StatusBadRequest)

	messages := b.count(t, "messages")
	swept, err = erasure.Sweep(ctx, b.store, 2) // three batches
	require.NoError(t, err)
	require.Equal(t, 5, swept.Conversations)
	require.Equal(t, 2, b.count(t, "conversations"))
	require.Equal(t, messages-5, b.count(t, "messages"))
	for _, id := range fresh {
		require.Equal(t, 1, b.countWhere(t, `SELECT count(*) FROM conversations WHERE id = $1`, id))
	}
}
