package channels

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIsSecret(t *testing.T) {
	for key, want := range map[string]bool{
		"access_token": true, "app_secret": true, "verify_token": true, "bot_token": true, "api_key": true,
		"password": true, "Token": true, "webhook_signing_secret": true, "private_key": true,
		"phone_number": false, "help_text": false, "region": false, "phone_id": false, "tokens_used": false,
	} {
		require.Equal(t, want, isSecret(key), key)
	}
}

func TestPublicConfigShowsHintsOnly(t *testing.T) {
	cfg := &Config{Plain: map[string]json.RawMessage{"phone_id": json.RawMessage(`"1234"`)},
		Secrets: map[string]string{"access_token": "EAAG-very-secret-0000-wxyz", "pin": "1234", "short_secret": "abc"}}
	raw, err := cfg.public()
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, map[string]any{"phone_id": "1234", "access_token": "…wxyz", "pin": "…", "short_secret": "…"}, got,
		"a short credential shows no characters at all")
	require.NotContains(t, string(raw), "very-secret")
}
