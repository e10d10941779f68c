package phonenumbers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNextMonth(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v
	}
	require.Equal(t, at("2026-02-15T10:30:00Z"), nextMonth(at("2026-01-15T10:30:00Z")))
	require.Equal(t, at("2026-02-28T00:00:00Z"), nextMonth(at("2026-01-31T00:00:00Z")), "a shorter month: its last day")
	require.Equal(t, at("2028-02-29T00:00:00Z"), nextMonth(at("2028-01-31T00:00:00Z")), "leap year")
	require.Equal(t, at("2027-01-31T23:00:00Z"), nextMonth(at("2026-12-31T23:00:00Z")))
}
