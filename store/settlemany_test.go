package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestSettleManyIsSettleOneByOne: one row update for the total, yet each ledger row and
// event carries the balance after its own charge, and the cursors run on without a gap.
func TestSettleManyIsSettleOneByOne(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "many", 1000)
	require.NoError(t, err)
	require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
		return tx.SettleMany(ctx, w.ID, []store.Settlement{spend(100), spend(200), spend(300)})
	}))
	require.Equal(t, []string{`{"cost": 100, "balance_usd": 0.0000009}`, `{"cost": 200, "balance_usd": 0.0000007}`,
		`{"cost": 300, "balance_usd": 0.0000004}`}, eventData(t, s, w.ID))
	got, err := s.WorkspaceByName(ctx, "many")
	require.NoError(t, err)
	require.Equal(t, int64(400), got.BalanceNanoUSD)
	require.Equal(t, int64(600), got.MonthSpendNanoUSD)

	rows, err := s.Pool().Query(ctx, `SELECT balance_after FROM ledger WHERE workspace_id = $1 ORDER BY id`, w.ID)
	require.NoError(t, err)
	var after []int64
	for rows.Next() {
		var b int64
		require.NoError(t, rows.Scan(&b))
		after = append(after, b)
	}
	require.NoError(t, rows.Err())
	require.ElementsMatch(t, []int64{900, 700, 400}, after)

	var seqs []int64
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT array_agg(seq ORDER BY seq) FROM events WHERE workspace_id = $1`, w.ID).Scan(&seqs))
	require.Equal(t, []int64{1, 2, 3}, seqs)
}

// TestSettleWorkspacesIsSettleManyPerWorkspace: several workspaces settled at once each get
// their own total, balances in order, month spend and gap-free cursors after the events they
// already had; a workspace that does not exist fails the whole settlement as not found.
func TestSettleWorkspacesIsSettleManyPerWorkspace(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	a, err := s.CreateWorkspace(ctx, "a", 1000)
	require.NoError(t, err)
	b, err := s.CreateWorkspace(ctx, "b", 5000)
	require.NoError(t, err)
	_, err = s.AppendEvents(ctx, b.ID, []store.NewEvent{{Type: "agent.created", Data: map[string]any{}}})
	require.NoError(t, err)
	require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
		return tx.SettleWorkspaces(ctx, []uuid.UUID{a.ID, b.ID}, [][]store.Settlement{{spend(100), spend(200)}, {spend(1000)}})
	}))
	require.Equal(t, []string{`{"cost": 100, "balance_usd": 0.0000009}`, `{"cost": 200, "balance_usd": 0.0000007}`}, eventData(t, s, a.ID))
	require.Equal(t, []string{`{}`, `{"cost": 1000, "balance_usd": 0.000004}`}, eventData(t, s, b.ID))
	for name, want := range map[string]struct{ balance, spend int64 }{"a": {700, 300}, "b": {4000, 1000}} {
		got, err := s.WorkspaceByName(ctx, name)
		require.NoError(t, err)
		require.Equal(t, want.balance, got.BalanceNanoUSD, name)
		require.Equal(t, want.spend, got.MonthSpendNanoUSD, name)
	}
	var seqs []int64
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT array_agg(seq ORDER BY seq) FROM events WHERE workspace_id = $1`, b.ID).Scan(&seqs))
	require.Equal(t, []int64{1, 2}, seqs)

	err = s.InTx(ctx, func(tx *store.Tx) error {
		return tx.SettleWorkspaces(ctx, []uuid.UUID{a.ID, uuid.New()}, [][]store.Settlement{{spend(1)}, {spend(1)}})
	})
	require.ErrorIs(t, err, store.ErrNotFound)
	got, err := s.WorkspaceByName(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, int64(700), got.BalanceNanoUSD, "rolled back")
}

// TestSettleManyWritesEachChargesLedgerRow: the batch's ledger rows, written in one statement,
// each hold their own charge: amount, category, model, tokens and conversation (or none).
func TestSettleManyWritesEachChargesLedgerRow(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "rows", 1000)
	require.NoError(t, err)
	conv, err := s.CreateConversation(ctx, w.ID, "api")
	require.NoError(t, err)
	require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
		return tx.SettleMany(ctx, w.ID, []store.Settlement{
			{Charge: &store.Charge{AmountNanoUSD: 100, Category: "model_usage", Model: "alpha", InputTokens: 11, OutputTokens: 3, ConversationID: &conv.ID}},
			{}, // no charge: no row
			{Charge: &store.Charge{AmountNanoUSD: 40, Category: "sms", InputTokens: 0, OutputTokens: 0}},
		})
	}))
	type row struct {
		Amount, BalanceAfter, In, Out int64
		Category                      string
		Model                         *string
		Conversation                  *uuid.UUID
	}
	rows, err := s.Pool().Query(ctx, `SELECT amount_nano_usd, balance_after, input_tokens, output_tokens, category, model, conversation_id
		FROM ledger WHERE workspace_id = $1 ORDER BY balance_after DESC`, w.ID)
	require.NoError(t, err)
	var got []row
	for rows.Next() {
		var r row
		require.NoError(t, rows.Scan(&r.Amount, &r.BalanceAfter, &r.In, &r.Out, &r.Category, &r.Model, &r.Conversation))
		got = append(got, r)
	}
	require.NoError(t, rows.Err())
	alpha, empty := "alpha", ""
	require.Equal(t, []row{
		{Amount: -100, BalanceAfter: 900, In: 11, Out: 3, Category: "model_usage", Model: &alpha, Conversation: &conv.ID},
		{Amount: -40, BalanceAfter: 860, Category: "sms", Model: &empty},
	}, got)
}
