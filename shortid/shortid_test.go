package shortid

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewIDsArePrefixedBase62AndDistinct(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := New(Conversation)
		require.True(t, strings.HasPrefix(id, "mc-"))
		require.True(t, Has(id, Conversation), id)
		require.False(t, seen[id])
		seen[id] = true
	}
	require.False(t, Has("mc-short", Conversation))
	require.False(t, Has("resp_"+strings.Repeat("-", 22), Response))
	require.False(t, Has(New(Response), Conversation))
}
