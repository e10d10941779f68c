package bulk_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/bulk"
	"switchboard/manage"
	"switchboard/store"
	"switchboard/store/storetest"
)

type testBundle struct {
	st  *store.Store
	ws  uuid.UUID
	svc *bulk.Service
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	st := storetest.New(t)
	ws, err := st.CreateWorkspace(context.Background(), "acme", 1)
	require.NoError(t, err)
	// Without a job client the run works in the call, batch by batch, as the job would.
	return &testBundle{st: st, ws: ws.ID, svc: bulk.New(st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))}
}

func (b *testBundle) op(t testing.TB, name string) manage.Operation {
	t.Helper()
	for _, o := range b.svc.Operations() {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no operation %s", name)
	return manage.Operation{}
}

// seed adds n conversations with two messages each.
func seed(t testing.TB, st *store.Store, ws uuid.UUID, n int, channel string) {
	t.Helper()
	ctx := context.Background()
	_, err := st.Pool().Exec(ctx, `INSERT INTO conversations (workspace_id, short_id, channel, message_seq)
		SELECT $1, 'mc-' || md5(random()::text || g::text), $2, 2 FROM generate_series(1, $3) g`, ws, channel, n)
	require.NoError(t, err)
	_, err = st.Pool().Exec(ctx, `INSERT INTO messages (workspace_id, conversation_id, seq, role, content)
		SELECT c.workspace_id, c.id, s, CASE s WHEN 1 THEN 'user' ELSE 'assistant' END, 'hello there, this is a message'
		FROM conversations c, generate_series(1, 2) s WHERE c.workspace_id = $1 AND c.channel = $2
		  AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id)`, ws, channel)
	require.NoError(t, err)
}

// A run works in batches of at most BatchSize rows, each its own transaction, and records
// its progress after each one.
func TestRunsInBoundedBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.svc.BatchSize = 10
	seed(t, b.st, b.ws, 25, "sms")
	seed(t, b.st, b.ws, 3, "webchat")
	o := b.op(t, "delete_conversations")
	require.Equal(t, agent.Risky, o.Class)
	require.True(t, o.ParksOnMCP)

	prepared, err := o.Prepare(context.Background(), agent.Call{WorkspaceID: b.ws, Arguments: json.RawMessage(`{"filter":{"channel":"sms"}}`)})
	require.NoError(t, err)
	require.Contains(t, prepared.Summary, "Delete 25 conversations (channel sms)")
	require.JSONEq(t, `{"filter":{"channel":"sms"},"parked":{"count":25}}`, string(prepared.Arguments))

	out, err := o.RunCall(context.Background(), agent.Call{WorkspaceID: b.ws, Arguments: prepared.Arguments})
	require.NoError(t, err)
	res := out.(bulk.Result)
	require.Equal(t, 25, res.Requested)
	require.Equal(t, 25, res.Affected)
	require.Equal(t, "completed", res.Status)
	var batches, messages int
	require.NoError(t, b.st.Pool().QueryRow(context.Background(), `SELECT batches FROM bulk_runs WHERE workspace_id = $1`, b.ws).Scan(&batches))
	require.Equal(t, 3, batches, "10 + 10 + 5")
	require.NoError(t, b.st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM messages WHERE workspace_id = $1`, b.ws).Scan(&messages))
	require.Equal(t, 6, messages, "the messages went with their conversations")
}

func TestDriftIsMoreThanTenPercent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seed(t, b.st, b.ws, 100, "sms")
	o := b.op(t, "delete_conversations")
	prepared, err := o.Prepare(context.Background(), agent.Call{WorkspaceID: b.ws, Arguments: json.RawMessage(`{"filter":{"channel":"sms"}}`)})
	require.NoError(t, err)
	call := agent.Call{WorkspaceID: b.ws, Arguments: prepared.Arguments}
	seed(t, b.st, b.ws, 10, "sms")
	resolution, _, err := o.Recheck(context.Background(), call)
	require.NoError(t, err)
	require.Empty(t, resolution, "exactly 10% more is not more than 10%")
	seed(t, b.st, b.ws, 1, "sms")
	resolution, why, err := o.Recheck(context.Background(), call)
	require.NoError(t, err)
	require.Equal(t, store.ActionAbortedDrift, resolution)
	require.Contains(t, why, "100 conversations matched when it was asked and 111 match now")
}
