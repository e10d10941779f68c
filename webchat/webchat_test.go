package webchat

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"testing"

	"github.com/google/uuid"
)

func TestTokens(t *testing.T) {
	tk := NewTokens([]byte("k"))
	d := uuid.New()
	tok := tk.Issue(d, "conv_abc")
	if c, ok := tk.Conversation(d, tok); !ok || c != "conv_abc" {
		t.Fatalf("round trip: %q %v", c, ok)
	}
	if _, ok := tk.Conversation(uuid.New(), tok); ok {
		t.Fatal("a token of another deployment was accepted")
	}
	forged := NewTokens([]byte("other")).Issue(d, "conv_xyz")
	if _, ok := tk.Conversation(d, forged); ok {
		t.Fatal("a token signed with another key was accepted")
	}
	rotated := NewTokens([]byte("new"), []byte("k"))
	if c, ok := rotated.Conversation(d, tok); !ok || c != "conv_abc" {
		t.Fatal("a token signed with the previous key must still be accepted during a rotation")
	}
	if _, ok := tk.Conversation(d, rotated.Issue(d, "conv_abc")); ok {
		t.Fatal("the old key alone must not accept what the new key signed")
	}
	for _, bad := range []string{"", ".", "abc", "Y29udl94eXo.AAAA"} {
		if _, ok := tk.Conversation(d, bad); ok {
			t.Fatalf("bad token %q accepted", bad)
		}
	}
}

func TestAllows(t *testing.T) {
	own := "https://sb.example"
	if !(Config{}).Allows("https://any.example", own) {
		t.Fatal("empty list must allow any origin")
	}
	c, err := ParseConfig([]byte(`{"allowed_origins":["https://shop.example/"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for origin, want := range map[string]bool{"https://shop.example": true, "https://evil.example": false, own: true, "": true} {
		if got := c.Allows(origin, own); got != want {
			t.Errorf("Allows(%q) = %v, want %v", origin, got, want)
		}
	}
	if _, err := ParseConfig([]byte(`{"allowed_origins":"x"}`)); err == nil {
		t.Fatal("a malformed list must be an error")
	}
}

// TestSizes measures what a page pays: the loader (every page view) must stay under 10 KB
// gzipped; the widget (only when opened) is reported. The README states both.
func TestSizes(t *testing.T) {
	loaderSize := gzipped(t, Loader("https://switchboard.example.com", uuid.MustParse("0b6f8a52-3c1d-4e7a-9f20-5d8c7b6a4e31")))
	widgetSize := gzipped(t, Widget) + gzipped(t, WidgetCSS)
	t.Logf("loader %d bytes gzipped; widget script and style sheet %d bytes gzipped", loaderSize, widgetSize)
	if loaderSize >= 10*1024 {
		t.Fatalf("the loader is %d bytes gzipped, over 10 KB", loaderSize)
	}
	if widgetSize >= 30*1024 {
		t.Fatalf("the widget is %d bytes gzipped, over 30 KB", widgetSize)
	}
	// The README states both sizes as measured here.
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for what, size := range map[string]int{"loader": loaderSize, "widget": widgetSize} {
		want := fmt.Sprintf("about %.1f KB gzipped", float64(size)/1024)
		if !bytes.Contains(bytes.Join(bytes.Fields(readme), []byte(" ")), []byte(want)) {
			t.Errorf("README.md (Webchat) must state the %s's size as %q", what, want)
		}
	}
}

func gzipped(t *testing.T, b []byte) int {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Len()
}
