package oauth

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedirectURIs(t *testing.T) {
	for _, ok := range []string{"https://app.example/cb", "http://127.0.0.1:8080/cb", "http://localhost/cb", "http://[::1]:9/cb", "cursor://anysphere.cursor-retrieval/oauth/cb", "com.example.app:/cb"} {
		require.NoError(t, checkRedirectURI(ok), ok)
	}
	for _, bad := range []string{"http://app.example/cb", "javascript:alert(1)", "data:text/html,x", "https://app.example/cb#x", "/relative", "https://", "ab:/x", "https://x/" + strings.Repeat("a", 2000)} {
		require.Error(t, checkRedirectURI(bad), bad)
	}
}

func TestRedirectMatching(t *testing.T) {
	reg := []string{"http://127.0.0.1:3000/cb", "https://app.example/cb"}
	require.True(t, redirectAllowed(reg, "http://127.0.0.1:3000/cb"))
	require.True(t, redirectAllowed(reg, "http://127.0.0.1:49152/cb"), "any port on loopback (RFC 8252)")
	require.False(t, redirectAllowed(reg, "http://127.0.0.1:49152/other"))
	require.False(t, redirectAllowed(reg, "http://localhost:3000/cb"), "another loopback host is another URI")
	require.False(t, redirectAllowed(reg, "https://app.example:444/cb"), "only loopback http may change port")
	require.False(t, redirectAllowed(reg, "https://app.example/cb/../x"))
}

func TestVerifierAndChallenge(t *testing.T) {
	require.True(t, validVerifier(strings.Repeat("a", 43)))
	require.True(t, validVerifier(strings.Repeat("-._~", 32)))
	require.False(t, validVerifier(strings.Repeat("a", 42)))
	require.False(t, validVerifier(strings.Repeat("a", 129)))
	require.False(t, validVerifier(strings.Repeat("a", 42)+"+"))
	require.True(t, validChallenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"))
	require.False(t, validChallenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-c"))
	require.False(t, validChallenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM"))
}
