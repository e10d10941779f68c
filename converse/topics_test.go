package converse_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/converse"
)

const rulesAgentYAML = `agent:
  name: Rules
  language: en
  persona:
    display_name: Rita
    tone: friendly
    greeting: Hi, I'm Rita.
  llm:
    provider: gamma
    model: gamma-v4-flash
    temperature: 0.4
    max_tokens: 256
    system_prompt: You help customers of an online shop.
  business_rules:
    blocked_topics: [politics, competitor pricing]
    escalation:
      enabled: true
      trigger: user_request
      action: transfer_to_human
      notification_email: team@example.com
      pickup_timeout_minutes: 10
`

func TestABlockedTopicIsRefusedWithoutTheModel(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, rulesAgentYAML)
	vendor := w.vendors[catalog.Gamma]

	for _, msg := range []string{"What do you think about POLITICS?", "Is your competitor-pricing better?"} {
		ans := w.chat(t, id, "", msg)
		require.Equal(t, converse.BlockedTopicReply, ans.Reply, msg)
		require.Equal(t, converse.StatusOpen, ans.Status)
		rulesAnswered(t, ans)
	}
	require.Empty(t, vendor.Requests())
	require.Equal(t, "blocked_topic", w.events(t, "turn.completed")[0].Data["handled_by"])

	// Whole words only: "politician" is not the topic; the model is told about paraphrases,
	// with the agent's settings.
	ans := w.chat(t, id, "", "Is a politician buying here?")
	require.Equal(t, "reply to: Is a politician buying here?", ans.Reply)
	require.Len(t, vendor.Requests(), 1)
	require.Contains(t, vendor.Requests()[0].System, "politics; competitor pricing")
	require.InDelta(t, 0.4, *vendor.Requests()[0].Temperature, 1e-6)
	require.Equal(t, 256, vendor.Requests()[0].MaxTokens)
}
