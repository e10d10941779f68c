package inputguard_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/inputguard"
)

func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestJSONTooDeep(t *testing.T) {
	t.Parallel()
	require.False(t, inputguard.JSONTooDeep([]byte(nested(inputguard.MaxDepth))))
	require.True(t, inputguard.JSONTooDeep([]byte(nested(inputguard.MaxDepth+1))))
	require.True(t, inputguard.JSONTooDeep([]byte(`{"a":`+nested(6000)+`}`)))
	// Brackets inside strings, escaped quotes included, do not count.
	require.False(t, inputguard.JSONTooDeep([]byte(`{"a":"`+strings.Repeat(`[\"{`, 100)+`"}`)))
	e := apierr.As(inputguard.CheckJSON([]byte(nested(100))))
	require.NotNil(t, e)
	require.Equal(t, "nesting_too_deep", e.Code)
	require.Contains(t, e.Message, "64")
}

func TestJSONNULNamesThePath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, path string }{
		{`{"input":"a\u0000b"}`, "input"},
		{`{"model":"x","input":[{"role":"user","content":[{"type":"input_text","text":"\u0000"}]}]}`, "input[0].content[0].text"},
		{`{"a":[1,{"b":null},"ok",["x","\u0000"]]}`, "a[3][1]"},
		{`{"a":{"k\u0000":1}}`, "a"},
		{`"\u0000"`, ""},
	} {
		path, ok := inputguard.JSONNUL([]byte(tc.body))
		require.True(t, ok, tc.body)
		require.Equal(t, tc.path, path, tc.body)
		e := apierr.As(inputguard.CheckJSON([]byte(tc.body)))
		require.Equal(t, "nul_character", e.Code)
		require.Equal(t, tc.path, e.Param)
	}
	for _, body := range []string{`{"a":"\\u0000"}`, `{"a":"ok"}`, "{\"a\":\"\x00\"}", `{"a":`} {
		_, ok := inputguard.JSONNUL([]byte(body))
		require.False(t, ok, body)
	}
}

func TestScrub(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a\uFFFDb", inputguard.Scrub("a\x00b"))
	require.Equal(t, "ab", inputguard.Scrub("ab"))
	require.JSONEq(t, `{"a":"x\ufffd","b":"\\ufffd"}`, string(inputguard.ScrubJSON([]byte(`{"a":"x\u0000","b":"\\u0000"}`))))
}

func TestCheckText(t *testing.T) {
	t.Parallel()
	require.NoError(t, inputguard.CheckText("id", "whe-abc é"))
	require.Equal(t, "nul_character", apierr.As(inputguard.CheckText("id", "a\x00")).Code)
	require.Equal(t, "invalid_utf8", apierr.As(inputguard.CheckText("id", "\xa3")).Code)
	require.Equal(t, "id", apierr.As(inputguard.CheckText("id", "\xa3")).Param)
}
