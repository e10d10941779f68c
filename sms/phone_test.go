package sms_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/sms"
)

func TestNormalizeE164(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ number, region, want string }{
		{"+14155552671", "", "+14155552671"},
		{"+1 (415) 555-2671", "", "+14155552671"},
		{"(415) 555-2671", "US", "+14155552671"},
		{"415.555.2671", "us", "+14155552671"},
		{" 1-415-555-2671 ", "US", "+14155552671"},
		{"011 44 20 7183 8750", "US", "+442071838750"}, // dialled from the US
		{"604-555-1234", "CA", "+16045551234"},
		{"+1 514 555 0000", "", "+15145550000"},
		{"+44 20 7183 8750", "", "+442071838750"},
		{"020 7183 8750", "GB", "+442071838750"},
		{"+49 30 123456", "", "+4930123456"},
		{"030 123456", "DE", "+4930123456"},
		{"+14155552671", "DE", "+14155552671"}, // a +country code wins over the region
		// The fictional 555-01xx numbers the test fakes use are valid to libphonenumber.
		{"+14155550100", "", "+14155550100"},
		{"+12125550102", "", "+12125550102"},
		{"+16045550103", "", "+16045550103"},
	} {
		got, err := sms.NormalizeE164(c.number, c.region)
		require.NoError(t, err, "%q in %q", c.number, c.region)
		require.Equal(t, c.want, got, "%q in %q", c.number, c.region)
	}
}

func TestNormalizeE164Refuses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ number, region, msg string }{
		{"", "US", "a phone number is required"},
		{"+1555", "", "+1555 is not a valid phone number: it is too short"},
		{"4155552671", "", "4155552671 is not a valid phone number: it needs a country code starting with +, such as +1 for the US"},
		{"+1 415 123 4567", "", "+1 415 123 4567 is not a valid phone number"}, // no such exchange
		{"+141555526712", "", "+141555526712 is not a valid phone number: it is too long"},
		{"+999 123 4567", "", "+999 123 4567 is not a valid phone number: its country code is unknown"},
		{"hello", "US", "hello is not a valid phone number: it is not a number"},
		{"+1 415 555 2671 ext. 12", "", "+1 415 555 2671 ext. 12 is not a valid phone number for text messages: it has an extension"},
		{"0044 20 7183 8750", "US", "0044 20 7183 8750 is not a valid phone number: it is too long"}, // 00 is not the US exit code
		{"+4930", "", "+4930 is not a valid phone number: it is too short"},
		{"555 2671", "US", "555 2671 is not a valid phone number: it is too short"}, // no area code
	} {
		_, err := sms.NormalizeE164(c.number, c.region)
		require.EqualError(t, err, c.msg, "%q in %q", c.number, c.region)
	}
}

func TestRegionOf(t *testing.T) {
	t.Parallel()
	for e164, want := range map[string]string{
		"+14155552671":  "US",
		"+14155550100":  "US",
		"+16045550103":  "CA",
		"+442071838750": "GB",
		"+4930123456":   "DE",
		"+80012345678":  "", // international freephone: no region
		"+15555550100":  "", // no such area code
		"":              "",
		"not a number":  "",
	} {
		require.Equal(t, want, sms.RegionOf(e164), e164)
	}
}
