package sms_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/sms"
)

func TestSegments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body string
		want int
	}{
		{"", 1},
		{"Spring sale!", 1},
		{strings.Repeat("a", 160), 1},
		{strings.Repeat("a", 161), 2},
		{strings.Repeat("a", 306), 2},
		{strings.Repeat("a", 307), 3},
		{strings.Repeat("€", 80), 1},  // two septets each: 160
		{strings.Repeat("€", 81), 2},  // 162 septets
		{strings.Repeat("é", 160), 1}, // é is in the GSM alphabet
		{strings.Repeat("ż", 70), 1},  // not GSM: UCS-2
		{strings.Repeat("ż", 71), 2},
		{strings.Repeat("ż", 134), 2},
		{strings.Repeat("ż", 135), 3},
		{"Hi 👋", 1}, // an emoji is two UTF-16 units
		{strings.Repeat("👋", 36), 2},
	} {
		require.Equal(t, c.want, sms.Segments(c.body), "%q", c.body)
	}
}
