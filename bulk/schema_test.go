package bulk_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/bulk"
)

// testdata/tool-schemas.json holds the tools' input schemas as they were when the filters'
// enumerations were written in tags; derived from the typed keys, they must stay the same.
func TestToolSchemasStayTheSame(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/tool-schemas.json")
	require.NoError(t, err)
	var want map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &want))
	ops := bulk.New(nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil))).Operations()
	require.Len(t, ops, len(want))
	for _, o := range ops {
		require.Contains(t, want, o.Name)
		require.JSONEq(t, string(want[o.Name]), string(o.Schema), o.Name)
	}
}
