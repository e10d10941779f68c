package apikey

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewKeysAreWellFormedAndDistinct(t *testing.T) {
	t.Parallel()
	k1, h1, d1 := New()
	k2, h2, _ := New()
	require.True(t, strings.HasPrefix(k1, Prefix))
	require.Len(t, k1, len(Prefix)+43, "32 random bytes in unpadded base64url")
	require.NotEqual(t, k1, k2)
	require.NotEqual(t, h1, h2)
	require.Len(t, h1, 32)
	require.Equal(t, "sk-svc_"+k1[7:11]+"…", d1)
	again, err := Hash(k1)
	require.NoError(t, err)
	require.Equal(t, h1, again)
}

func TestHashRefusesMalformedKeys(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"", "sk-svc_", "sk-svc_short", "sk-other_" + strings.Repeat("a", 40), "sk-svc_" + strings.Repeat("a", 39) + " ", "sk-svc_" + strings.Repeat("é", 40)} {
		_, err := Hash(k)
		require.ErrorIs(t, err, ErrMalformed, k)
	}
}
