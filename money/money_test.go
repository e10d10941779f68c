package money

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseAndFormatUSD(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{
		"5": 5_000_000_000, "5.00": 5_000_000_000, "-0.25": -250_000_000, "0.000000001": 1, ".5": 500_000_000, "+2.1": 2_100_000_000,
	} {
		got, err := ParseUSD(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", ".", "abc", "1.0000000001", "1e3", "--1", "1.-5", "99999999999"} {
		_, err := ParseUSD(bad)
		require.Error(t, err, bad)
	}
	require.Equal(t, "5.00", FormatUSD(5_000_000_000))
	require.Equal(t, "0.0000015", FormatUSD(1500))
	require.Equal(t, "-0.25", FormatUSD(-250_000_000))
	require.Equal(t, "0.00", FormatUSD(0))
}

func TestFormatCents(t *testing.T) {
	t.Parallel()
	for nano, want := range map[int64]string{
		0: "0.00", 4_990_000_000: "4.99", 4_987_654_321: "4.99", 4_985_000_000: "4.99", 4_984_999_999: "4.98",
		1500: "0.00", 5_000_000: "0.01", 4_999_999: "0.00", -250_000_000: "-0.25", -1500: "0.00", -5_000_000: "-0.01",
		123_456_000_000_000: "123456.00",
	} {
		require.Equal(t, want, FormatCents(nano), nano)
	}
}
