package jsonappend

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

var tricky = []string{"", "plain", `quote " and \ backslash`, "new\nline\r\ttab\bback\fform", "\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "é ü 漢字 🙂", "\u2028 and \u2029", "bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate"}

func encodingJSON(t testing.TB, s string) string {
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(want)
}

func TestStringEncodesAsEncodingJSONDoes(t *testing.T) {
	for _, s := range tricky {
		if got, want := string(String(nil, s)), encodingJSON(t, s); got != want {
			t.Errorf("String(%q) = %s, encoding/json %s", s, got, want)
		}
	}
	// Random strings over the bytes that matter: ASCII controls, the escaped punctuation,
	// and the lead and continuation bytes of valid and invalid UTF-8.
	alphabet := []byte("a\"\\<>&\n\b\f\x00\x1f\x7f\xc3\xa9\xe2\x80\xa8\xf0\x9f\x99\x82\xff")
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, r.IntN(40)) // past 8 bytes: String reads eight at a time
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if got, want := string(String(nil, string(b))), encodingJSON(t, string(b)); got != want {
			t.Fatalf("String(%q) = %s, encoding/json %s", b, got, want)
		}
	}
}

// TestStringFindsEachByteAtEachPlace: a byte that must be escaped, or begins a sequence, at
// every place of plain text longer than the eight bytes String reads at a time, beside the
// bytes just inside and outside of what it reads as plain.
func TestStringFindsEachByteAtEachPlace(t *testing.T) {
	const plainText = "abcdefghijklmnopqrstuvwx"
	for _, odd := range []string{"\x00", "\x1f", " ", "!", "\"", "#", "%", "&", "'", "<", "=", ">", "\\", "]", "\x7f", "\x80", "\xff", "é", "\u2028", "漢"} {
		for at := range len(plainText) + 1 {
			for _, s := range []string{plainText[:at] + odd + plainText[at:], plainText[:at] + odd + odd + plainText[at:]} {
				if got, want := string(String(nil, s)), encodingJSON(t, s); got != want {
					t.Fatalf("String(%q) = %s, encoding/json %s", s, got, want)
				}
			}
		}
	}
}

func TestStringAppends(t *testing.T) {
	if got := string(String([]byte(`{"a":`), "x")); got != `{"a":"x"` {
		t.Fatal(got)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(String(nil, s)), encodingJSON(t, s); got != want {
			t.Fatalf("String(%q) = %s, encoding/json %s", s, got, want)
		}
	})
}

// BenchmarkStringSearchResult writes a knowledge search's result as a turn's vendor request
// carries it: five chunks of about 850 characters of prose (converse's searchOutput), a
// JSON document as a JSON string.
func BenchmarkStringSearchResult(b *testing.B) {
	words := []string{"kalon", "mineru", "sativo", "baden", "fighu", "jakeli", "monupe", "rakan", "tivo", "desa"}
	doc := []byte(`{"results":[`)
	for c := range 5 {
		if c > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, `{"title":"Handbook","url":"https://example.com/handbook","content":"`...)
		for n := 0; n < 850; n++ {
			w := words[(c*7+n*3)%len(words)]
			doc = append(doc, w...)
			n += len(w)
			doc = append(doc, ' ')
		}
		doc = append(doc, `."}`...)
	}
	doc = append(doc, `]}`...)
	s := string(doc)
	buf := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = String(buf[:0], s)
	}
}

// BenchmarkString writes what a vendor request body carries most of: a knowledge search's
// tool result, a JSON document of passages of prose, as a JSON string (passages of a sentence
// each: an escape every 15 bytes or so).
func BenchmarkString(b *testing.B) {
	passage := `{"title":"Opening hours","url":"https://example.com/hours","content":"We are open from nine to five on weekdays, and on Sundays from ten to four. Orders placed after three ship the next day."}`
	var doc []byte
	for len(doc) < 3500 {
		doc = append(doc, passage...)
	}
	s := string(doc)
	buf := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = String(buf[:0], s)
	}
}
