package blueprint

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"switchboard/catalog"
)

// FuzzParse feeds arbitrary bytes to Parse. Besides not panicking or hanging, it checks:
// a rejection is an Errors of located messages; an accepted blueprint survives a round trip
// through YAML unchanged and is accepted by the JSON Schema (which must never be stricter
// than Parse).
//
//	go test -run='^$' -fuzz=FuzzParse -fuzztime=60s -fuzzminimizetime=1s ./blueprint/
//
// (The seeds include 10 KB files; without the minimize limit the fuzzer spends long pauses
// shrinking each new input.)
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(testdata, "*", "*.yaml"))
	require.NoError(f, err)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte(""))
	f.Add([]byte("agent: &a [*a]"))
	cat := catalog.Default()
	schema := compileSchema(f)

	f.Fuzz(func(t *testing.T, data []byte) {
		bp, err := Parse(data, cat)
		if err != nil {
			require.Nil(t, bp)
			var errs Errors
			require.True(t, errors.As(err, &errs), "%T", err)
			require.NotEmpty(t, errs)
			for _, e := range errs {
				require.NotEmpty(t, e.Message, "%v", err)
				require.GreaterOrEqual(t, e.Line, 0)
			}
			return
		}
		_ = Warnings(bp)

		out, err := yaml.Marshal(bp)
		require.NoError(t, err)
		again, err := Parse(out, cat)
		require.NoError(t, err, "re-parsing\n%s", out)
		requireSameBlueprint(t, bp, again)

		doc, ok := yamlToJSON(t, data)
		require.True(t, ok)
		require.NoError(t, schema.Validate(instance(t, doc)), "the schema rejects what Parse accepts")
	})
}
