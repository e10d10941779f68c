package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSummaryCountsAndFailsLikeGoTest(t *testing.T) {
	t.Parallel()
	passing := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"skip","Package":"p","Test":"TestB","Elapsed":0}
{"Action":"pass","Package":"p","Elapsed":0.5}
{"Action":"output","Package":"q","Output":"?   \tq\t[no test files]\n"}
{"Action":"skip","Package":"q","Elapsed":0}
`
	var out strings.Builder
	require.Equal(t, 0, summarize(strings.NewReader(passing), &out, time.Now()))
	require.Contains(t, out.String(), "ok    p (0.5s)")
	require.Contains(t, out.String(), "PASS: 1 tests passed, 0 failed, 1 skipped; 2 packages (0 failed, 1 without tests)")

	failing := passing + `{"Action":"output","Package":"r","Test":"TestC","Output":"    c_test.go:9: boom\n"}
{"Action":"fail","Package":"r","Test":"TestC","Elapsed":0}
{"Action":"fail","Package":"r","Elapsed":0.1}
`
	out.Reset()
	require.Equal(t, 1, summarize(strings.NewReader(failing), &out, time.Now()))
	require.Contains(t, out.String(), "c_test.go:9: boom", "a failed test's output is shown")
	require.Contains(t, out.String(), "FAIL: 1 tests passed, 1 failed")

	out.Reset()
	require.Equal(t, 1, summarize(strings.NewReader(""), &out, time.Now()), "no package at all is a failure, not a pass")
}

func TestSummaryListsTheSlowestTopLevelTests(t *testing.T) {
	t.Parallel()
	var in strings.Builder
	for i := 1; i <= 12; i++ {
		in.WriteString(`{"Action":"pass","Package":"p","Test":"TestN` + strings.Repeat("x", i) + `","Elapsed":` + strings.Repeat("1", i) + `}` + "\n")
	}
	in.WriteString(`{"Action":"pass","Package":"p","Test":"TestSlowParent/sub","Elapsed":99999999999999}` + "\n")
	in.WriteString(`{"Action":"pass","Package":"p","Elapsed":1}` + "\n")
	var out strings.Builder
	require.Equal(t, 0, summarize(strings.NewReader(in.String()), &out, time.Now()))
	s := out.String()
	slow := s[strings.Index(s, "Slowest tests:"):]
	require.Contains(t, slow, "p.Test"+"N"+strings.Repeat("x", 12), "the slowest is listed")
	require.Less(t, strings.Index(slow, "N"+strings.Repeat("x", 12)), strings.Index(slow, "N"+strings.Repeat("x", 11)+"\n"), "slowest first")
	require.NotContains(t, slow, "p.TestNxx\n", "only the ten slowest")
	require.NotContains(t, slow, "sub", "subtests are inside their parent's time")
}
