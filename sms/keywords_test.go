package sms_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/sms"
)

func TestKeywordOf(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]sms.Keyword{
		"STOP":            sms.KeywordStop,
		"stop":            sms.KeywordStop,
		"  Stop.  ":       sms.KeywordStop,
		"STOP!!":          sms.KeywordStop,
		"stop)":           sms.KeywordStop,
		"StopAll":         sms.KeywordStop,
		"unsubscribe":     sms.KeywordStop,
		"Cancel":          sms.KeywordStop,
		"end":             sms.KeywordStop,
		"QUIT\n":          sms.KeywordStop,
		"START":           sms.KeywordStart,
		"unstop":          sms.KeywordStart,
		"Yes!":            sms.KeywordStart,
		"help":            sms.KeywordHelp,
		"Info.":           sms.KeywordHelp,
		"":                sms.KeywordNone,
		"   ":             sms.KeywordNone,
		"stop it please":  sms.KeywordNone,
		"yes please":      sms.KeywordNone,
		"please stop":     sms.KeywordNone,
		"stopped":         sms.KeywordNone,
		"help?":           sms.KeywordNone, // a question is for the agent
		"STOP STOP":       sms.KeywordNone,
		"I need help":     sms.KeywordNone,
		"the end":         sms.KeywordNone,
		"what's the info": sms.KeywordNone,
	} {
		require.Equal(t, want, sms.KeywordOf(body), "%q", body)
	}
}

func TestKeywordString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "NONE", sms.KeywordNone.String())
	require.Equal(t, "STOP", sms.KeywordStop.String())
	require.Equal(t, "START", sms.KeywordStart.String())
	require.Equal(t, "HELP", sms.KeywordHelp.String())
}

func TestKeywordRepliesFitOneSegment(t *testing.T) {
	t.Parallel()
	workspace := strings.Repeat("W", 30)
	for name, text := range map[string]string{
		"stop":  sms.StopConfirmation(workspace),
		"start": sms.StartConfirmation(workspace),
		"help":  sms.DefaultHelpText(workspace),
	} {
		require.Contains(t, text, workspace, name)
		require.Equal(t, 1, sms.Segments(text), "%s: %q", name, text)
		require.LessOrEqual(t, len(text), 160, name)
	}
	require.Contains(t, sms.StopConfirmation("Acme"), "Reply START to resubscribe.")
	require.Contains(t, sms.StartConfirmation("Acme"), "STOP")
	require.Contains(t, sms.DefaultHelpText("Acme"), "Reply STOP to unsubscribe.")
}
