package msgapps

import (
	"html"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"switchboard/sms"
)

// Style is what an app renders of the Markdown models write.
type Style int

// The styles.
const (
	// Plain: Messenger and Instagram show text as it is, so Markdown is removed.
	Plain Style = iota
	// WhatsAppStyle: *bold*, _italic_, ~strikethrough~.
	WhatsAppStyle
	// TelegramHTML: Telegram's parse_mode HTML (<b>, <i>, <s>, the rest escaped).
	TelegramHTML
)

// Sentinels stand for emphasis while sms.PlainText removes the rest of the Markdown: they are
// private-use characters it leaves alone (not its own \uE000 and \uE001).
const (
	boldOpen, boldClose     = "\uE010", "\uE011"
	italicOpen, italicClose = "\uE012", "\uE013"
	strikeOpen, strikeClose = "\uE014", "\uE015"
)

// emphasisRules map Markdown's delimiter pairs to sentinels, longest first (*** before **
// before *). Like sms.PlainText, a delimiter opens only after a non-word character and closes
// only before one, so snake_case and 2*3*4 stay as they are.
var emphasisRules = func() []struct {
	re          *regexp.Regexp
	open, close string
} {
	var out []struct {
		re          *regexp.Regexp
		open, close string
	}
	for _, d := range []struct{ delim, open, close string }{
		{"***", boldOpen + italicOpen, italicClose + boldClose}, {"___", boldOpen + italicOpen, italicClose + boldClose},
		{"**", boldOpen, boldClose}, {"__", boldOpen, boldClose}, {"~~", strikeOpen, strikeClose},
		{"*", italicOpen, italicClose}, {"_", italicOpen, italicClose},
	} {
		q, c := regexp.QuoteMeta(d.delim), `[^\s`+regexp.QuoteMeta(d.delim[:1])+`]`
		re := regexp.MustCompile(`(^|[^\p{L}\p{N}` + regexp.QuoteMeta(d.delim[:1]) + `])` + q + `(` + c + `|` + c + `.*?` + c + `)` + q + `($|[^\p{L}\p{N}])`)
		out = append(out, struct {
			re          *regexp.Regexp
			open, close string
		}{re, d.open, d.close})
	}
	return out
}()

var sentinels = strings.NewReplacer(boldOpen, "", boldClose, "", italicOpen, "", italicClose, "", strikeOpen, "", strikeClose, "")

// Format converts an agent's Markdown to what the app renders: emphasis in the app's own
// syntax where it has one, everything else (headings, links, lists, code) as sms.PlainText
// writes it for a phone.
func Format(markdown string, style Style) string {
	s := sentinels.Replace(markdown)
	if style != Plain {
		for range 8 {
			before := s
			for _, r := range emphasisRules {
				s = r.re.ReplaceAllString(s, "${1}"+r.open+"${2}"+r.close+"${3}")
			}
			if s == before {
				break
			}
		}
	}
	s = sms.PlainText(s)
	switch style {
	case WhatsAppStyle:
		return strings.NewReplacer(boldOpen, "*", boldClose, "*", italicOpen, "_", italicClose, "_", strikeOpen, "~", strikeClose, "~").Replace(s)
	case TelegramHTML:
		return strings.NewReplacer(boldOpen, "<b>", boldClose, "</b>", italicOpen, "<i>", italicClose, "</i>",
			strikeOpen, "<s>", strikeClose, "</s>").Replace(html.EscapeString(s))
	default:
		return sentinels.Replace(s)
	}
}

// Split cuts text into parts of at most limit characters (runes), at sentence ends where it
// can, else at a space, else anywhere: an app refuses a longer message, and a reply cut
// mid-word reads worse than two messages.
func Split(text string, limit int) []string {
	text = strings.TrimSpace(text)
	var parts []string
	for utf8.RuneCountInString(text) > limit {
		r := []rune(text)
		cut := breakAt(r, limit)
		parts = append(parts, strings.TrimSpace(string(r[:cut])))
		text = strings.TrimSpace(string(r[cut:]))
	}
	if text != "" {
		parts = append(parts, text)
	}
	return parts
}

// breakAt is where to cut r so that the first part has at most limit runes: after the last
// sentence end (. ! ? … followed by a space, or a line break) in the second half, else after
// the last space, else at limit.
func breakAt(r []rune, limit int) int {
	lastSpace := -1
	for i := limit; i > limit/2; i-- {
		if r[i] == '\n' {
			return i
		}
		if unicode.IsSpace(r[i]) {
			if strings.ContainsRune(".!?…", r[i-1]) {
				return i
			}
			if lastSpace < 0 {
				lastSpace = i
			}
		}
	}
	if lastSpace > 0 {
		return lastSpace
	}
	return limit
}
