package sms

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// NormalizeE164 returns number in E.164 form (+14155552671), the one spelling the provider,
// the contact store and opt-out lists compare, so that "(415) 555-2671" and "+1 415 555 2671"
// are the same person. Parsing and validation are libphonenumber's, never a regex: its
// metadata knows each country's lengths and ranges, which a pattern cannot keep up with.
//
// defaultRegion (an ISO code such as "US") is the country assumed for a number written
// without a +country code; "" means the number must carry one. A number that parses but is
// not in a range libphonenumber knows to be assigned (IsValidNumber) is refused, and so is
// one with an extension, which a text message cannot reach. The error reads as an API
// error message: "+1555 is not a valid phone number: it is too short".
func NormalizeE164(number, defaultRegion string) (string, error) {
	number = strings.TrimSpace(number)
	if number == "" {
		return "", errors.New("a phone number is required")
	}
	shown := shortened(number)
	region := strings.ToUpper(strings.TrimSpace(defaultRegion))
	if region == "" && !strings.HasPrefix(number, "+") {
		return "", fmt.Errorf("%s is not a valid phone number: it needs a country code starting with +, such as +1 for the US", shown)
	}
	parsed, err := phonenumbers.Parse(number, region)
	if err != nil {
		return "", fmt.Errorf("%s is not a valid phone number: %s", shown, parseProblem(err, region))
	}
	if parsed.GetExtension() != "" {
		return "", fmt.Errorf("%s is not a valid phone number for text messages: it has an extension", shown)
	}
	if !phonenumbers.IsValidNumber(parsed) {
		return "", fmt.Errorf("%s is not a valid phone number%s", shown, lengthProblem(parsed))
	}
	return phonenumbers.Format(parsed, phonenumbers.E164), nil
}

// RegionOf is the ISO 3166 region code ("US", "GB") a number belongs to, or "" when it is
// not a number, has no single region (non-geographic codes such as +800), or is in no range
// the metadata knows. +1 numbers are told apart by area code: +1 604 is "CA".
func RegionOf(e164 string) string {
	parsed, err := phonenumbers.Parse(strings.TrimSpace(e164), "")
	if err != nil {
		return ""
	}
	switch region := phonenumbers.GetRegionCodeForNumber(parsed); region {
	case phonenumbers.UNKNOWN_REGION, "001":
		return ""
	default:
		return region
	}
}

// parseProblem turns libphonenumber's parse errors, written for programmers, into the reason
// a person can act on.
func parseProblem(err error, region string) string {
	switch {
	case errors.Is(err, phonenumbers.ErrInvalidCountryCode):
		if region != "" {
			return "its country code is unknown, or " + region + " is not a known region"
		}
		return "its country code is unknown"
	case errors.Is(err, phonenumbers.ErrTooShortNSN), errors.Is(err, phonenumbers.ErrTooShortAfterIDD):
		return "it is too short"
	case errors.Is(err, phonenumbers.ErrNumTooLong):
		return "it is too long"
	default:
		return "it is not a number"
	}
}

// lengthProblem says why a parsed number is invalid when its length alone explains it, and
// nothing otherwise (a number of the right length outside any assigned range).
func lengthProblem(n *phonenumbers.PhoneNumber) string {
	switch phonenumbers.IsPossibleNumberWithReason(n) {
	case phonenumbers.TOO_SHORT, phonenumbers.IS_POSSIBLE_LOCAL_ONLY: // local: no area code
		return ": it is too short"
	case phonenumbers.TOO_LONG:
		return ": it is too long"
	case phonenumbers.INVALID_COUNTRY_CODE:
		return ": its country code is unknown"
	case phonenumbers.INVALID_LENGTH:
		return ": it has the wrong number of digits"
	default:
		return ""
	}
}

// shortened keeps an echoed input short, so a pasted paragraph does not become the error.
func shortened(s string) string {
	const limit = 40
	if r := []rune(s); len(r) > limit {
		return string(r[:limit]) + "…"
	}
	return s
}
