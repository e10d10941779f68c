package campaigns

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

func TestUntilWindow(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	ny := "America/New_York"
	c := store.Campaign{WindowStart: s("09:00"), WindowEnd: s("17:00"), Timezone: &ny}
	at := func(hhmm string) time.Time {
		loc, err := time.LoadLocation(ny)
		require.NoError(t, err)
		d, err := time.ParseInLocation("2006-01-02 15:04", "2026-11-23 "+hhmm, loc)
		require.NoError(t, err)
		return d
	}
	require.Zero(t, untilWindow(c, at("09:00")), "open at its start")
	require.Zero(t, untilWindow(c, at("16:59")))
	require.Equal(t, time.Hour, untilWindow(c, at("08:00")), "opens later today")
	require.Equal(t, 16*time.Hour, untilWindow(c, at("17:00")), "closed at its end: opens tomorrow")

	night := store.Campaign{WindowStart: s("22:00"), WindowEnd: s("06:00")}
	utc := func(h int) time.Time { return time.Date(2026, 11, 23, h, 0, 0, 0, time.UTC) }
	require.Zero(t, untilWindow(night, utc(23)), "a window across midnight, before it")
	require.Zero(t, untilWindow(night, utc(5)), "and after it")
	require.Equal(t, 10*time.Hour, untilWindow(night, utc(12)))

	require.Zero(t, untilWindow(store.Campaign{}, utc(3)), "no window: any hour")
}
