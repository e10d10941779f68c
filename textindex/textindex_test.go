package textindex

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAddReadsPostgreSQLsTextForm: quotes doubled, backslashes, weights, a lexeme without
// positions; a document is found by each of its lexemes and only by them.
func TestAddReadsPostgreSQLsTextForm(t *testing.T) {
	var b Builder
	require.NoError(t, b.Add(`'bake':2,5B 'o''clock':3A 'back\\slash':7C 'bare'`))
	require.NoError(t, b.Add(`'bake':1`))
	x := b.Index()
	var bad Builder
	require.Error(t, bad.Add(`bake:1`), "a lexeme is quoted")
	require.Error(t, bad.Add(`'bake':x`), "a position is a number")
	require.Error(t, bad.Add(`'bake`), "a lexeme is closed")
	require.Equal(t, 2, x.Docs())

	pos, ok := x.occurrences("bake", 0)
	require.True(t, ok)
	require.Equal(t, []uint16{2, 2<<14 | 5}, pos)
	pos, _ = x.occurrences("o'clock", 0)
	require.Equal(t, []uint16{3<<14 | 3}, pos)
	pos, _ = x.occurrences(`back\slash`, 0)
	require.Equal(t, []uint16{1<<14 | 7}, pos)
	pos, ok = x.occurrences("bare", 0)
	require.True(t, ok)
	require.Empty(t, pos)
	_, ok = x.occurrences("bare", 1)
	require.False(t, ok)

	require.Equal(t, []Match{{Doc: 0, Terms: 2, Repeated: true}, {Doc: 1, Terms: 1}}, slices.Collect(x.Matches([]string{"bake", "bare", "cake"})))
	require.Empty(t, slices.Collect(x.Matches([]string{"cake"})))
}
