package store_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/money"
	"switchboard/store/storetest"
)

// TestFormatUSDIsMoneyFormatUSD: the database's format_usd (migration 0022), which writes the
// balance into the group commit's spend events, gives money.FormatUSD's text for every amount:
// the edges of the decimals, and random amounts of every magnitude, both signs.
func TestFormatUSDIsMoneyFormatUSD(t *testing.T) {
	s := storetest.New(t)
	amounts := []int64{0, 1, 9, 10, 99, 100, 10_000_000, 99_999_999, 100_000_000, 120_000_000, 999_999_999,
		1_000_000_000, 1_000_000_001, 12_500_000_000, 999_990_265_311_250, 1 << 62}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		amounts = append(amounts, r.Int64N(int64(1)<<(1+r.IntN(62))))
	}
	for _, a := range amounts[:len(amounts):len(amounts)] {
		amounts = append(amounts, -a)
	}
	var got []string
	require.NoError(t, s.Pool().QueryRow(context.Background(),
		`SELECT array_agg(format_usd(a) ORDER BY n) FROM unnest($1::bigint[]) WITH ORDINALITY AS x(a, n)`, amounts).Scan(&got))
	require.Len(t, got, len(amounts))
	for i, a := range amounts {
		require.Equal(t, money.FormatUSD(a), got[i], "%d nano-USD", a)
	}
}
