package accounts_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/accounts"
)

func TestPasswordHashes(t *testing.T) {
	t.Parallel()
	h, err := accounts.HashPassword("correct horse battery staple")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(h, "$argon2id$v=19$m=65536,t=3,p=2$"), h)
	require.True(t, accounts.VerifyPassword(h, "correct horse battery staple"))
	require.False(t, accounts.VerifyPassword(h, "correct horse battery stapler"))
	h2, err := accounts.HashPassword("correct horse battery staple")
	require.NoError(t, err)
	require.NotEqual(t, h, h2, "salted")
	for _, bad := range []string{"", "$argon2id$", "$argon2i$v=19$m=65536,t=3,p=2$c2FsdA$a2V5", "$argon2id$v=19$m=1,t=0,p=1$c2FsdA$a2V5"} {
		require.False(t, accounts.VerifyPassword(bad, "x"), bad)
	}
}
