package converse

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/blueprint"
)

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v
}

func TestOpen(t *testing.T) {
	t.Parallel()
	bh := &blueprint.BusinessHours{Timezone: "Europe/Berlin", Schedule: &blueprint.Schedule{
		Monday:   &blueprint.Hours{Start: "22:00", End: "06:00"}, // overnight into Tuesday
		Tuesday:  &blueprint.Hours{Start: "09:00", End: "17:00"},
		Friday:   &blueprint.Hours{Start: "20:00", End: "24:00"},
		Saturday: &blueprint.Hours{Start: "09:00", End: "17:00"},
		Sunday:   &blueprint.Hours{Start: "09:00", End: "17:00"},
	}, Holidays: []string{"2026-12-22"}}
	for instant, want := range map[string]bool{
		"2026-11-23T20:59:00Z": false, // Monday 21:59 local
		"2026-11-23T21:00:00Z": true,  // Monday 22:00
		"2026-11-24T04:59:00Z": true,  // Tuesday 05:59, Monday's shift
		"2026-11-24T05:00:00Z": false, // Tuesday 06:00
		"2026-11-24T08:00:00Z": true,  // Tuesday 09:00
		"2026-11-25T10:00:00Z": false, // Wednesday: not in the schedule
		"2026-11-27T22:59:00Z": true,  // Friday 23:59, open until 24:00
		"2026-11-27T23:00:00Z": false, // Saturday 00:00
		"2026-12-21T22:00:00Z": true,  // Monday 23:00
		"2026-12-21T23:30:00Z": false, // Tuesday 00:30 on the holiday: closed all day
		"2026-12-22T10:00:00Z": false, // the holiday's own hours
		// Daylight saving began on Sunday 2026-03-29 at 02:00: 07:30 UTC is 08:30 on
		// Saturday (UTC+1) but 09:30 on Sunday (UTC+2).
		"2026-03-28T07:30:00Z": false,
		"2026-03-29T07:30:00Z": true,
		"2026-03-29T14:59:00Z": true,  // 16:59 CEST
		"2026-03-29T15:00:00Z": false, // 17:00 CEST
	} {
		got, err := Open(bh, at(t, instant))
		require.NoError(t, err)
		require.Equal(t, want, got, instant)
	}
	open, err := Open(nil, time.Now())
	require.NoError(t, err)
	require.True(t, open)
}
