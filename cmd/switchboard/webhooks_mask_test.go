package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMaskSecret: the listener shows a secret's prefix and last four characters only.
func TestMaskSecret(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwxyz": "whsec_…wxyz",
		"whsec_abc":                   "whsec_…",
		"whsec_":                      "whsec_…",
		"":                            "…",
		"unprefixed-secret-of-length": "…ngth",
	} {
		require.Equal(t, want, maskSecret(in), in)
	}
}

// TestListenerPrintsTheSecretMasked: the ready line never carries the whole secret unless
// --show-secret asks for it.
func TestListenerPrintsTheSecretMasked(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwxyz"
	masked := (&listener{}).secret(secret)
	require.NotContains(t, masked, secret)
	require.NotContains(t, masked, "MfKQ9r8G")
	require.Contains(t, masked, "whsec_…wxyz")
	require.Contains(t, masked, "--show-secret")
	require.Equal(t, secret, (&listener{showSecret: true}).secret(secret))

	var stderr bytes.Buffer
	err := webhooksCommand(t.Context(), config{Addr: ":0"}, []string{"listen", "--show-secret", "--nope"}, func(string) string { return "" }, &stderr, &stderr)
	require.ErrorAs(t, err, &usageError{}, "an unknown flag is still a usage error")
	require.Contains(t, stderr.String(), "-show-secret", "the flag is documented in the command's help")
}
