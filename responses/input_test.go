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
	mixed := []responses.Message{{Role: "system", Text: "be brief"}, {Role: "developer", Text: "plain text"}, {Role: "user", Text: "a"},
		{Role: "developer", Text: "no emoji"}, {Role: "assistant", Text: "b"}, {Role: "user", Text: "c"}}
	for name, tc := range map[string]struct {
		msgs  []responses.Message
		lift  responses.Lift
		want  responses.TurnInput
		param string // of the error, when one is expected
		code  string
	}{
		"one user message": {
			msgs: []responses.Message{{Role: "user", Text: "hi"}},
			want: responses.TurnInput{Text: "hi"},
		},
		// v1-api.md, POST /v1/responses: "leading `system`/`developer` items are lifted into
		// additional instructions; the last `user` item is the turn text." A later one keeps
		// its place in the history.
		"responses: only leading system/developer items are lifted": {
			msgs: mixed, lift: responses.LiftLeading,
			want: responses.TurnInput{Instructions: []string{"be brief", "plain text"},
				Seed: []llm.Message{{Role: llm.RoleUser, Text: "a"}, {Role: llm.RoleUser, Text: "[developer message] no emoji"}, {Role: llm.RoleAssistant, Text: "b"}}, Text: "c"},
		},
		// v1-api.md, POST /v1/chat/completions rule 2: "`system`/`developer` messages become
		// additional instructions; the last `user` message is the turn input."
		"chat: every system/developer message is lifted": {
			msgs: mixed, lift: responses.LiftAll,
			want: responses.TurnInput{Instructions: []string{"be brief", "plain text", "no emoji"},
				Seed: []llm.Message{{Role: llm.RoleUser, Text: "a"}, {Role: llm.RoleAssistant, Text: "b"}}, Text: "c"},
		},
		// Decided where the spec is silent: the last user item is the turn text, so an item
		// after it could only be dropped; it is refused, naming its index, never dropped.
		"responses: an item after the last user item is refused": {
			msgs: []responses.Message{{Role: "user", Text: "q"}, {Role: "assistant", Text: "late"}, {Role: "tool", Text: "x"}},
			lift: responses.LiftLeading, param: "messages[1]", code: "after_last_user_message",
		},
		"chat: a system message after the last user message is refused": {
			msgs: []responses.Message{{Role: "system", Text: "s"}, {Role: "user", Text: "q"}, {Role: "system", Text: "late"}},
			lift: responses.LiftAll, param: "messages[2]", code: "after_last_user_message",
		},
		"tool messages are skipped": {
			msgs: []responses.Message{{Role: "tool", Text: "x"}, {Role: "user", Text: "q"}},
			want: responses.TurnInput{Text: "q"},
		},
		"no user message": {msgs: []responses.Message{{Role: "system", Text: "x"}}, param: "messages", code: "missing_user_message"},
		"unknown role":    {msgs: []responses.Message{{Role: "robot", Text: "x"}, {Role: "user", Text: "q"}}, param: "messages[0].role", code: "invalid_value"},
		"nothing at all":  {msgs: nil, param: "messages", code: "missing_user_message"},
	} {
		got, err := responses.SplitMessages(tc.msgs, "messages", tc.lift)
		if tc.param != "" {
			e := apierr.As(err)
			require.Equal(t, tc.param, e.Param, name)
			require.Equal(t, tc.code, e.Code, name)
			continue
		}
		require.NoError(t, err, name)
		require.Equal(t, tc.want, got, name)
	}
}
