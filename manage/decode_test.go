package manage

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

type status string

type decodeProbe struct {
	Filter struct {
		Status status   `json:"status"`
		Labels []string `json:"labels"`
	} `json:"filter"`
	Limit int `json:"limit"`
}

// TestDecodeErrorsSpeakJSON: a 400 names the field's path and the JSON type it needs, never a
// Go type.
func TestDecodeErrorsSpeakJSON(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		`{"filter":{"status":5}}`:     "filter.status must be a string, not number",
		`{"filter":{"labels":"vip"}}`: "filter.labels must be an array, not string",
		`{"limit":"ten"}`:             "limit must be an integer, not string",
		`{"limit":1.5}`:               "limit must be an integer, not number 1.5",
		`{"filter":[]}`:               "filter must be an object, not array",
		`{"nope":1}`:                  `unknown field "nope"`,
		`{"limit":`:                   "the arguments are not valid JSON (they end too soon)",
		`{"limit" 1}`:                 "the arguments are not valid JSON (invalid character '1' after object key)",
	} {
		_, err := decodeInput[decodeProbe]("probe", json.RawMessage(args))
		require.Error(t, err, args)
		require.Equal(t, "The arguments do not fit the input schema of probe: "+want, err.Error(), args)
		require.NotContains(t, err.Error(), "manage.", args)
	}
}
