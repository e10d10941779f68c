package responses_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/llm"
	"switchboard/responses"
)

func TestSplitMessages(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		msgs  []responses.Message
		want  responses.TurnInput
		param string // of the error, when one is expected
	}{
		"one user message": {
			msgs: []responses.Message{{Role: "user", Text: "hi"}},
			want: responses.TurnInput{Text: "hi"},
		},
		"system anywhere is an instruction": {
			msgs: []responses.Message{{Role: "system", Text: "be brief"}, {Role: "user", Text: "a"}, {Role: "developer", Text: "no emoji"}, {Role: "assistant", Text: "b"}, {Role: "user", Text: "c"}},
			want: responses.TurnInput{Instructions: []string{"be brief", "no emoji"},
				Seed: []llm.Message{{Role: llm.RoleUser, Text: "a"}, {Role: llm.RoleAssistant, Text: "b"}}, Text: "c"},
		},
		"after the last user message is ignored": {
			msgs: []responses.Message{{Role: "user", Text: "q"}, {Role: "assistant", Text: "ignored"}, {Role: "tool", Text: "x"}},
			want: responses.TurnInput{Text: "q"},
		},
		"tool messages are skipped": {
			msgs: []responses.Message{{Role: "tool", Text: "x"}, {Role: "user", Text: "q"}},
			want: responses.TurnInput{Text: "q"},
		},
		"no user message": {msgs: []responses.Message{{Role: "system", Text: "x"}}, param: "messages"},
		"unknown role":    {msgs: []responses.Message{{Role: "robot", Text: "x"}, {Role: "user", Text: "q"}}, param: "messages[0].role"},
		"nothing at all":  {msgs: nil, param: "messages"},
	} {
		got, err := responses.SplitMessages(tc.msgs, "messages")
		if tc.param != "" {
			require.Equal(t, tc.param, apierr.As(err).Param, name)
			continue
		}
		require.NoError(t, err, name)
		require.Equal(t, tc.want, got, name)
	}
}
