package sms_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"switchboard/sms"
)

func TestPlainText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, in, want string }{
		{"plain text is untouched", "Hi Ann, your table is booked for 7pm.", "Hi Ann, your table is booked for 7pm."},
		{"headings", "# Opening hours\n## Weekdays ##\nMon-Fri", "Opening hours\nWeekdays\nMon-Fri"},
		{"hashtag and C# are not headings", "#1 priority\nWe use C# here", "#1 priority\nWe use C# here"},
		{"emphasis", "**Open** *today* and __tomorrow__, _not_ ~~Sunday~~ ***really***", "Open today and tomorrow, not Sunday really"},
		{"nested emphasis", "**bold with *italic* inside**", "bold with italic inside"},
		{"adjacent emphasis", "*a* *b* _c_ _d_", "a b c d"},
		{"snake_case survives", "set max_retry_count to 3", "set max_retry_count to 3"},
		{"email with underscore", "write to ann_lee@example.com or bob__x@example.com", "write to ann_lee@example.com or bob__x@example.com"},
		{"multiplication", "2 * 3 * 4 = 24 and 5*6*7 = 210", "2 * 3 * 4 = 24 and 5*6*7 = 210"},
		{"lone underscores and stars", "fill in ___ and rate it * out of 5", "fill in ___ and rate it * out of 5"},
		{"inline code", "run `make test` now", "run make test now"},
		{"inline code keeps its stars", "type `**not bold**` literally", "type **not bold** literally"},
		{"double backtick code", "use ``a ` b`` here", "use a ` b here"},
		{"unclosed backtick", "it's 5` tall", "it's 5` tall"},
		{"fenced code keeps its text", "Try:\n```sh\ncurl -X POST *x*\n  indented\n```\nDone.", "Try:\ncurl -X POST *x*\n  indented\nDone."},
		{"tilde fence", "~~~\ncode\n~~~", "code"},
		{"blockquote", "> Quoted **text**\n> > nested", "Quoted text\nnested"},
		{"bullets become dashes", "- one\n* two\n+ three\n  - nested", "- one\n- two\n- three\n  - nested"},
		{"numbered list", "1. first\n2. second\n10) tenth", "1. first\n2. second\n10) tenth"},
		{"link", "Book [here](https://example.com/book) today", "Book here (https://example.com/book) today"},
		{"link text equal to URL", "[https://example.com](https://example.com)", "https://example.com"},
		{"link text is the host", "see [example.com](https://www.example.com/)", "see https://www.example.com/"},
		{"link with title", `[Docs](https://x.io/docs "The docs")`, "Docs (https://x.io/docs)"},
		{"link with parentheses in URL", "[Go](https://en.wikipedia.org/wiki/Go_(programming_language))", "Go (https://en.wikipedia.org/wiki/Go_(programming_language))"},
		{"link with angle destination", "[Map](<https://x.io/a b>)", "Map (https://x.io/a b)"},
		{"link with underscores in URL", "[Form](https://x.io/sign_up_now?ref=a_b)", "Form (https://x.io/sign_up_now?ref=a_b)"},
		{"emphasised link text", "[**Pay now**](https://pay.example.com)", "Pay now (https://pay.example.com)"},
		{"relative link keeps its text", "see [pricing](/pricing) and [FAQ](#faq)", "see pricing and FAQ"},
		{"mailto link", "[ann@example.com](mailto:ann@example.com) or [email us](mailto:help@example.com)", "ann@example.com or email us (help@example.com)"},
		{"tel link", "[Call us](tel:+14155552671)", "Call us (+14155552671)"},
		{"tel link showing the number", "[+1 415 555 2671](tel:+14155552671)", "+1 415 555 2671"},
		{"bold label without a space", "**Note:**text", "**Note:**text"},
		{"bold around italic", "**bold *italic***", "bold italic"},
		{"image", "![Store map](https://x.io/map.png)", "Store map https://x.io/map.png"},
		{"image without alt", "![](https://x.io/map.png)", "https://x.io/map.png"},
		{"autolink", "Visit <https://example.com/a_b> or <ann@example.com>", "Visit https://example.com/a_b or ann@example.com"},
		{"reference links", "Read [the guide][g] and [FAQ][].\n\n[g]: https://x.io/guide\n[faq]: https://x.io/faq \"FAQ\"", "Read the guide (https://x.io/guide) and FAQ (https://x.io/faq)."},
		{"brackets that are not links", "Pick [A] or [B] (either)", "Pick [A] or [B] (either)"},
		{"bare URL with underscores and emphasis around", "**https://x.io/__init__** and _https://x.io/a_b_", "https://x.io/__init__ and https://x.io/a_b"},
		{"bare URL before punctuation", "Go to https://x.io/a_b_c. Or (https://x.io/d_e_f).", "Go to https://x.io/a_b_c. Or (https://x.io/d_e_f)."},
		{"html tags", "<p>Hello <b>there</b><br>friend</p>", "Hello there\nfriend"},
		{"html link", `<a href="https://x.io/?a=1&amp;b=2">Shop</a>`, "Shop (https://x.io/?a=1&b=2)"},
		{"angle placeholders survive", "Hi <first name>, 2 < 3 and 5 > 4", "Hi <first name>, 2 < 3 and 5 > 4"},
		{"entities", "Tom &amp; Jerry &lt;3", "Tom & Jerry <3"},
		{"escapes", `\*not emphasis\* and \_x\_ and \[y\]`, "*not emphasis* and _x_ and [y]"},
		{"rules", "above\n\n---\n\nbelow\n***", "above\n\nbelow"},
		{"setext heading", "Title\n=====\nbody", "Title\nbody"},
		{"table", "| Plan | Price |\n|------|------:|\n| Basic   | $5 |", "Plan | Price\nBasic | $5"},
		{"blank lines collapse and trailing spaces go", "a  \n\n\n\n\nb\t\n", "a\n\nb"},
		{"CRLF", "**a**\r\nb\r\n", "a\nb"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, sms.PlainText(c.in))
		})
	}
}

func TestCut(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short text is untouched", "Hello there.", 20, "Hello there."},
		{"exactly max", "abcde", 5, "abcde"},
		{"at a sentence", "One two three. Four five six.", 20, "One two three."},
		{"keeps the latest sentence that fits", "A b. C d! E f? G h i j k", 16, "A b. C d! E f?"},
		{"sentence inside a quote", `He said "go." Then more words follow here`, 20, `He said "go."`},
		{"at a line break", "Options:\n- one\n- two\n- three", 20, "Options:\n- one\n- two"},
		{"word when no sentence in the last half", "Hi. This is a long sentence without end", 25, "Hi. This is a long..."},
		{"word when no sentence at all", "one two three four five", 12, "one two..."},
		{"a URL is not split", "Pay here https://pay.example.com/inv_123 please", 30, "Pay here..."},
		{"a URL alone is split", "https://pay.example.com/inv_123", 10, "https:/..."},
		{"a dot inside a URL is no sentence end", "See https://x.io/a.b and more words", 24, "See https://x.io/a.b..."},
		{"runes, not bytes", "ééé ééé ééé", 10, "ééé ééé..."},
		{"zero", "abc", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := sms.Cut(c.in, c.max)
			require.Equal(t, c.want, got)
			require.LessOrEqual(t, utf8.RuneCountInString(got), c.max)
		})
	}
}

func TestReply(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Open today (https://x.io)", sms.Reply("**Open** [today](https://x.io)"))

	long := strings.Repeat("This is **one** sentence of the reply. ", 100)
	got := sms.Reply(long)
	require.LessOrEqual(t, utf8.RuneCountInString(got), sms.MaxReplyChars)
	require.Greater(t, utf8.RuneCountInString(got), sms.MaxReplyChars-50)
	require.True(t, strings.HasSuffix(got, "reply."), got)
	require.NotContains(t, got, "*")
}
