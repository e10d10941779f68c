package store_test

import (
	"context"
	"testing"

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
	var seen []int64
	item := func(cost int64) store.Settlement {
		return store.Settlement{Charge: &store.Charge{AmountNanoUSD: cost, Category: "model_usage", Model: "m"},
			Build: func(balance int64) []store.NewEvent {
				seen = append(seen, balance)
				return []store.NewEvent{{Type: "spend.recorded", Data: map[string]any{"balance": balance}}}
			}}
	}
	require.NoError(t, s.InTx(ctx, func(tx *store.Tx) error {
		return tx.SettleMany(ctx, w.ID, []store.Settlement{item(100), item(200), item(300)})
	}))
	require.Equal(t, []int64{900, 700, 400}, seen)
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
