// Package money converts between decimal US dollar strings and the integer billionths of a
// dollar ("nano-USD") in which balances, prices and charges are kept, so that no amount is
// ever rounded by floating point.
package money

import (
	"fmt"
	"strconv"
	"strings"
)

// NanoPerUSD is the number of nano-USD in a dollar.
const NanoPerUSD = 1_000_000_000

// ParseUSD parses a decimal amount such as "5", "5.00", "-0.25" or "0.000000001".
func ParseUSD(s string) (int64, error) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > 9 || strings.ContainsAny(whole+frac, "+-") {
		return 0, fmt.Errorf("%q is not a dollar amount with at most 9 decimals", s)
	}
	if whole == "" {
		whole = "0"
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > 9_000_000_000 {
		return 0, fmt.Errorf("%q is not a dollar amount", s)
	}
	f := int64(0)
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return 0, fmt.Errorf("%q is not a dollar amount", s)
		}
	}
	n := w*NanoPerUSD + f
	if neg {
		n = -n
	}
	return n, nil
}

// FormatUSD renders nano-USD as a decimal string with at least two decimals and no trailing
// zeros beyond them: 5000000000 is "5.00", 1500 is "0.0000015".
func FormatUSD(nano int64) string {
	sign := ""
	if nano < 0 {
		sign, nano = "-", -nano
	}
	frac := strings.TrimRight(fmt.Sprintf("%09d", nano%NanoPerUSD), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return fmt.Sprintf("%s%d.%s", sign, nano/NanoPerUSD, frac)
}

// FormatCents renders nano-USD rounded to whole cents, halves away from zero: 4_987_654_321
// is "4.99". It is for reading, where the exact amount (FormatUSD) is a tooltip or an export
// away; never for sums, which stay in nano-USD.
func FormatCents(nano int64) string {
	sign := ""
	if nano < 0 {
		sign, nano = "-", -nano
	}
	const nanoPerCent = NanoPerUSD / 100
	cents := nano/nanoPerCent + (nano%nanoPerCent*2)/nanoPerCent // +1 when the rest is at least half a cent
	if cents == 0 {
		sign = "" // no "-0.00"
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}
