package sms

import "unicode/utf16"

// gsm7 is the GSM 03.38 basic character set; gsm7ext are the characters of its extension
// table, which take two septets each.
const (
	gsm7 = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
		"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
	gsm7ext = "\f^{}\\[~]|€"
)

var gsm7Set, gsm7ExtSet = runeSet(gsm7), runeSet(gsm7ext)

func runeSet(s string) map[rune]bool {
	m := map[rune]bool{}
	for _, r := range s {
		m[r] = true
	}
	return m
}

// Segments is how many SMS segments body is sent as, which is what carriers (and the
// platform's per-SMS price) count: in the GSM-7 alphabet 160 characters fit one segment and
// 153 each of a longer message (extension characters such as € count twice); a body with
// any other character goes as UCS-2, 70 in one segment and 67 each of a longer one.
func Segments(body string) int {
	septets, gsm := 0, true
	for _, r := range body {
		switch {
		case gsm7Set[r]:
			septets++
		case gsm7ExtSet[r]:
			septets += 2
		default:
			gsm = false
		}
	}
	single, multi, n := 160, 153, septets
	if !gsm {
		single, multi, n = 70, 67, len(utf16.Encode([]rune(body)))
	}
	if n <= single {
		return 1
	}
	return (n + multi - 1) / multi
}
