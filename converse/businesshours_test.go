package converse_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/converse"
)

const hoursAgentYAML = `agent:
  name: Opening Hours
  language: en
  persona:
    display_name: Otto
    tone: professional
    greeting: Hello, this is Otto.
  llm:
    provider: alpha
    model: alpha-haiku-4-5
    temperature: 0.5
    max_tokens: 200
    system_prompt: You answer questions about the shop.
  business_rules:
    business_hours:
      timezone: Europe/Berlin
      schedule:
        monday: {start: "22:00", end: "06:00"}
        saturday: {start: "09:00", end: "17:00"}
        sunday: {start: "09:00", end: "17:00"}
      holidays: ["2026-12-26"]
      after_hours_message: We are closed. Come back during opening hours.
`

const closedReply = "We are closed. Come back during opening hours."

func TestAfterHoursTheMessageAnswersWithoutTheModel(t *testing.T) {
	t.Parallel()
	// Daylight saving starts in Berlin on Sunday 2026-03-29: 07:30 UTC is 08:30 on Saturday
	// (closed) and 09:30 on Sunday (open).
	w := newWorld(t, "2026-03-28T07:30:00Z")
	id := w.agent(t, hoursAgentYAML)
	vendor := w.vendors[catalog.Alpha]

	closed := w.chat(t, id, "", "Are you open?")
	require.Equal(t, closedReply, closed.Reply)
	rulesAnswered(t, closed)
	require.Empty(t, vendor.Requests(), "the model is not called after hours")

	w.clock.Advance(24 * time.Hour)
	open := w.chat(t, id, closed.ConversationID, "Are you open?")
	require.Equal(t, "reply to: Are you open?", open.Reply)
	require.Len(t, vendor.Requests(), 1)
	require.InDelta(t, 0.5, *vendor.Requests()[0].Temperature, 1e-9, "the agent's temperature reaches the vendor")

	for instant, isOpen := range map[string]bool{
		"2026-11-23T21:30:00Z": true,  // Monday 22:30: the overnight shift began
		"2026-11-24T04:30:00Z": true,  // Tuesday 05:30: Monday's shift goes on
		"2026-11-24T05:30:00Z": false, // Tuesday 06:30
		"2026-12-26T10:00:00Z": false, // a Saturday, but a holiday
	} {
		w.clock.Set(t, instant)
		calls := len(vendor.Requests())
		ans := w.chat(t, id, "", "Hello?")
		require.Equal(t, isOpen, ans.Reply != closedReply, instant)
		require.Equal(t, isOpen, len(vendor.Requests()) == calls+1, instant)
	}

	// The rule's turn is recorded, and not charged.
	completed := w.events(t, "turn.completed")
	require.Equal(t, "after_hours", completed[0].Data["handled_by"])
	require.Equal(t, "agent", completed[0].Data["surface"])
	require.Equal(t, closedReply, completed[0].Data["reply_preview"])
	require.Len(t, w.events(t, "spend.recorded"), 3, "only the model turns were charged")
}

func TestAfterHoursWithoutAMessageTheDefaultOneAnswers(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "2026-03-28T07:30:00Z") // Saturday 08:30 in Berlin
	id := w.agent(t, strings.Replace(hoursAgentYAML, "      after_hours_message: "+closedReply+"\n", "", 1))
	ans := w.chat(t, id, "", "Are you open?")
	require.Equal(t, converse.DefaultAfterHoursMessage, ans.Reply)
	require.Empty(t, w.vendors[catalog.Alpha].Requests())
}
