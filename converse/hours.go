package converse

import (
	"fmt"
	"slices"
	"time"

	"switchboard/blueprint"
)

// Open reports whether the business is open at instant t by the agent's business hours. No
// business hours means always open.
//
// The schedule is read in its own time zone, on the wall clock: 09:00 is nine in the morning
// local time on both sides of a daylight-saving change. A day that is null or left out is
// closed; an end earlier than the start is an overnight shift, open from the start on that
// day until the end on the next; 24:00 is the end of the day. A holiday closes its whole
// local date, including the tail of an overnight shift that began the evening before, and
// the shift that would start on the holiday.
func Open(bh *blueprint.BusinessHours, t time.Time) (bool, error) {
	if bh == nil || bh.Schedule == nil {
		return true, nil
	}
	loc, err := time.LoadLocation(bh.Timezone)
	if err != nil {
		return false, fmt.Errorf("business hours: %w", err)
	}
	local := t.In(loc)
	if slices.Contains(bh.Holidays, local.Format(time.DateOnly)) {
		return false, nil
	}
	minute := local.Hour()*60 + local.Minute()
	if start, end, ok := shift(bh.Schedule, local.Weekday()); ok {
		if start < end && minute >= start && minute < end {
			return true, nil
		}
		if start > end && minute >= start { // tonight's overnight shift has begun
			return true, nil
		}
	}
	// The tail of yesterday's overnight shift, unless yesterday was a holiday.
	yesterday := local.AddDate(0, 0, -1)
	if start, end, ok := shift(bh.Schedule, yesterday.Weekday()); ok && start > end && minute < end &&
		!slices.Contains(bh.Holidays, yesterday.Format(time.DateOnly)) {
		return true, nil
	}
	return false, nil
}

// shift is a day's opening hours in minutes after midnight.
func shift(s *blueprint.Schedule, d time.Weekday) (start, end int, ok bool) {
	h := [...]*blueprint.Hours{s.Sunday, s.Monday, s.Tuesday, s.Wednesday, s.Thursday, s.Friday, s.Saturday}[d]
	if h == nil {
		return 0, 0, false
	}
	start, err1 := minutes(h.Start)
	end, err2 := minutes(h.End)
	if err1 != nil || err2 != nil || start == end {
		return 0, 0, false // the blueprint parser refuses these; a stored one is read as closed
	}
	return start, end, true
}

func minutes(hhmm string) (int, error) {
	var h, m int
	if _, err := fmt.Sscanf(hhmm, "%d:%d", &h, &m); err != nil {
		return 0, err
	}
	return h*60 + m, nil
}
