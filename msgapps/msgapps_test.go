package msgapps_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/msgapps"
)

func TestFormatPerApp(t *testing.T) {
	md := "**Open** today, _until_ 6 & ~~never~~ on `file_name`: see [site](https://x.io/a_b)"
	require.Equal(t, "*Open* today, _until_ 6 & ~never~ on file_name: see site (https://x.io/a_b)", msgapps.Format(md, msgapps.WhatsAppStyle))
	require.Equal(t, "<b>Open</b> today, <i>until</i> 6 &amp; <s>never</s> on file_name: see site (https://x.io/a_b)", msgapps.Format(md, msgapps.TelegramHTML))
	require.Equal(t, "Open today, until 6 & never on file_name: see site (https://x.io/a_b)", msgapps.Format(md, msgapps.Plain))
	require.Equal(t, "snake_case and 2*3*4", msgapps.Format("snake_case and 2*3*4", msgapps.WhatsAppStyle))
}

func TestSplitAtSentenceEnds(t *testing.T) {
	text := strings.Repeat("One sentence here. ", 10) // 190 characters
	parts := msgapps.Split(text, 50)
	for _, p := range parts {
		require.LessOrEqual(t, len([]rune(p)), 50)
		require.True(t, strings.HasSuffix(p, "."), p)
	}
	require.Equal(t, strings.TrimSpace(text), strings.Join(parts, " "))
	require.Equal(t, []string{"short"}, msgapps.Split(" short ", 50))
	long := strings.Repeat("x", 120)
	require.Equal(t, []string{long[:50], long[50:100], long[100:]}, msgapps.Split(long, 50), "no space: cut at the limit")
}

func TestMetaSignatureAndHandshake(t *testing.T) {
	body := []byte(`{"object":"page"}`)
	sig := msgapps.SignMeta("s3cret", body)
	require.True(t, msgapps.ValidMetaSignature("s3cret", body, sig))
	require.False(t, msgapps.ValidMetaSignature("other", body, sig))
	require.False(t, msgapps.ValidMetaSignature("s3cret", []byte(`{"object":"pagE"}`), sig))
	require.False(t, msgapps.ValidMetaSignature("s3cret", body, strings.TrimPrefix(sig, "sha256=")))
	q := url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {"vt"}, "hub.challenge": {"42"}}
	c, ok := msgapps.VerifyHandshake(q, "vt")
	require.True(t, ok)
	require.Equal(t, "42", c)
	_, ok = msgapps.VerifyHandshake(q, "other")
	require.False(t, ok)
}

func TestTelegramSecretAndBotID(t *testing.T) {
	require.Equal(t, "123", msgapps.BotID("123:abc"))
	require.Empty(t, msgapps.BotID("abc"))
	s := msgapps.TelegramSecret("123:abc", "token")
	require.Len(t, s, 64, "within Telegram's 1-256 characters of A-Z, a-z, 0-9, _ and -")
	require.NotEqual(t, s, msgapps.TelegramSecret("123:abd", "token"))
	require.True(t, msgapps.ValidTelegramSecret(s, s))
	require.False(t, msgapps.ValidTelegramSecret("", s))
}
