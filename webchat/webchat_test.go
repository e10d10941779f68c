package webchat

import (
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
