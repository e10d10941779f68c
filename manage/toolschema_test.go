package manage

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// testdata/tool-schemas.json holds the tool input schemas as they were written by hand before
// they were derived from the input types; the derived schemas must keep every constraint.
func TestToolSchemasKeepTheirConstraints(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/tool-schemas.json")
	require.NoError(t, err)
	var want map[string]any
	require.NoError(t, json.Unmarshal(raw, &want))
	got := map[string]any{}
	for _, o := range (&Service{}).Operations() {
		var schema any
		require.NoError(t, json.Unmarshal(o.Schema, &schema), o.Name)
		got[o.Name] = schema
	}
	for name := range want {
		require.Equal(t, want[name], got[name], name)
	}
	require.Len(t, got, len(want))
}
