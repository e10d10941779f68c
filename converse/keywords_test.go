package converse_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/converse"
)

const contactAgentYAML = `agent:
  name: Contact Collector
  language: en
  persona:
    display_name: Cora
    tone: friendly
    greeting: Hi, I'm Cora.
  llm:
    provider: beta
    model: beta-5.4
    temperature: 0.7
    max_tokens: 256
    system_prompt: You help customers of an online shop.
  business_rules:
    escalation:
      enabled: true
      trigger: keyword_match
      action: collect_contact
      keywords: [refund, "speak to the boss"]
`

func TestAKeywordAsksForContactDetailsAndTheNextMessagesAreReadForThem(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, contactAgentYAML)
	vendor := w.vendors[catalog.Beta]

	plain := w.chat(t, id, "", "Are refunds possible?") // "refunds" is not the keyword
	require.Equal(t, "reply to: Are refunds possible?", plain.Reply)
	require.Nil(t, plain.Escalation)
	ask := w.chat(t, id, plain.ConversationID, "I want a REFUND.")
	require.Equal(t, converse.StatusOpen, ask.Status)
	require.Equal(t, &converse.Escalation{Trigger: "keyword_match", Action: "collect_contact"}, ask.Escalation)
	require.Contains(t, ask.Reply, "email address or phone number")
	rulesAnswered(t, ask)
	require.True(t, w.conversation(t, plain.ConversationID).AwaitingContact)
	require.Empty(t, w.notifications(t), "no notification_email, no mail")

	// A message without contact details is answered by the model; the next one is read again.
	other := w.chat(t, id, plain.ConversationID, "What do you sell?")
	require.Equal(t, "reply to: What do you sell?", other.Reply)
	got := w.chat(t, id, plain.ConversationID, "My name is Grace Hopper, call me at +1 555 010 2030")
	require.Contains(t, got.Reply, "Grace Hopper")
	require.Contains(t, got.Reply, "+1 555 010 2030")
	rulesAnswered(t, got)
	require.Len(t, vendor.Requests(), 2)

	state := w.conversation(t, plain.ConversationID)
	require.False(t, state.AwaitingContact)
	require.Equal(t, "Grace Hopper", *state.Contact.Name)
	require.Equal(t, "+1 555 010 2030", *state.Contact.Phone)
	require.Nil(t, state.Contact.Email)
	completed := w.events(t, "turn.completed")
	require.Equal(t, "contact_collected", completed[len(completed)-1].Data["handled_by"])

	// A second keyword does not escalate again.
	require.Equal(t, "reply to: A refund, please", w.chat(t, id, plain.ConversationID, "A refund, please").Reply)
}

func TestWithoutKeywordsTheDefaultOnesEscalate(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, strings.Replace(contactAgentYAML, "      keywords: [refund, \"speak to the boss\"]\n", "", 1))
	msg := "Something about " + converse.DefaultEscalationKeywords[0]
	ans := w.chat(t, id, "", msg)
	require.NotNil(t, ans.Escalation, msg)
	require.Equal(t, "keyword_match", ans.Escalation.Trigger)
	require.Empty(t, w.vendors[catalog.Beta].Requests())
}
