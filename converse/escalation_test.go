package converse_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/converse"
	"switchboard/llm/llmtest"
	"switchboard/mailer"
	"switchboard/mailer/mailtest"
	"switchboard/store"
)

func TestTransferToHumanSilencesTheAgentUntilThePickupTimeout(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, rulesAgentYAML)
	vendor := w.vendors[catalog.Gamma]

	first := w.chat(t, id, "", "Where is my parcel?")
	esc := w.chat(t, id, first.ConversationID, "Can I talk to a real person please?")
	require.Equal(t, converse.StatusEscalated, esc.Status)
	require.Equal(t, &converse.Escalation{Trigger: "user_request", Action: "transfer_to_human"}, esc.Escalation)
	require.Contains(t, esc.Reply, "member of our team")
	rulesAnswered(t, esc)
	require.Len(t, vendor.Requests(), 1, "the escalation answers without the model")

	// The human gets a short summary by email (a queued job), the dashboard an event.
	mails := w.notifications(t)
	require.Len(t, mails, 1)
	require.Equal(t, "team@example.com", mails[0].To)
	require.Contains(t, mails[0].Subject, "user_request")
	require.Contains(t, mails[0].Body, "Where is my parcel?")
	require.Contains(t, mails[0].Body, "Can I talk to a real person please?")
	completed := w.events(t, "turn.completed")
	last := completed[len(completed)-1]
	require.Equal(t, "escalated", last.Data["status"])
	require.Equal(t, "escalation", last.Data["handled_by"])
	escData := last.Data["escalation"].(map[string]any)
	require.Equal(t, "transfer_to_human", escData["action"])
	require.Equal(t, mails[0].Body, escData["summary"])
	state := w.conversation(t, first.ConversationID)
	require.Equal(t, converse.StatusEscalated, state.Status)
	require.WithinDuration(t, w.clock.Now(), *state.EscalatedAt, time.Millisecond)

	// The agent stops answering: the human has the conversation. One second before the
	// timeout it is still silent.
	w.clock.Advance(10*time.Minute - time.Second)
	quiet := w.chat(t, id, first.ConversationID, "Hello?")
	require.Equal(t, "", quiet.Reply)
	require.Equal(t, converse.StatusEscalated, quiet.Status)

	// Nobody picked it up within 10 minutes: the visitor is told, once, and asked for
	// contact details.
	w.clock.Advance(time.Second)
	timeout := w.chat(t, id, first.ConversationID, "Anyone there?")
	require.Contains(t, timeout.Reply, "nobody from our team is free")
	require.Contains(t, timeout.Reply, "email address or phone number")
	again := w.chat(t, id, first.ConversationID, "Hello again?")
	require.Contains(t, again.Reply, "So that our team can get back to you", "the visitor is asked again, not told again")
	thanks := w.chat(t, id, first.ConversationID, "Sure, I'm Ada and my email is ada@example.com")
	require.Contains(t, thanks.Reply, "ada@example.com")
	require.Len(t, vendor.Requests(), 1)

	state = w.conversation(t, first.ConversationID)
	require.Equal(t, converse.StatusEscalated, state.Status)
	require.Equal(t, "Ada", *state.Contact.Name)
	require.Equal(t, "ada@example.com", *state.Contact.Email)
	require.NotNil(t, state.PickupTimedOutAt)
	require.False(t, state.AwaitingContact)
	// The team hears about the contact details too.
	mails = w.notifications(t)
	require.Len(t, mails, 2)
	require.Contains(t, mails[1].Subject, "Contact details received")
	require.Contains(t, mails[1].Body, "ada@example.com")
}

func TestTheDefaultPickupTimeout(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, strings.Replace(rulesAgentYAML, "      pickup_timeout_minutes: 10\n", "", 1))
	esc := w.chat(t, id, "", "I want to speak to a human")
	require.Equal(t, converse.StatusEscalated, esc.Status)
	w.clock.Advance(converse.DefaultPickupTimeout - time.Second)
	require.Empty(t, w.chat(t, id, esc.ConversationID, "Hello?").Reply)
	w.clock.Advance(time.Second)
	require.Contains(t, w.chat(t, id, esc.ConversationID, "Hello?").Reply, "nobody from our team is free")
}

// TestTheNotificationJobMailsTheSummary works a queued notification through the real mailer
// into an SMTP sink.
func TestTheNotificationJobMailsTheSummary(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, rulesAgentYAML)
	w.chat(t, id, "", "Can I talk to a real person please?")
	queued := w.notifications(t)
	require.Len(t, queued, 1)

	sink := mailtest.New(t)
	sender, err := mailer.New(sink.URL(), "noreply@switchboard.test")
	require.NoError(t, err)
	require.NoError(t, converse.NewNotifier(sender).Work(context.Background(), &river.Job[converse.NotifyArgs]{Args: queued[0]}))
	got := sink.Messages()
	require.Len(t, got, 1)
	require.Equal(t, []string{"team@example.com"}, got[0].To)
	require.Equal(t, queued[0].Subject, got[0].Subject)
	require.Contains(t, got[0].Body, "Can I talk to a real person please?")
}

func sentimentYAML(name, trigger string) string {
	return strings.NewReplacer("Contact Collector", name, "keyword_match", trigger, "collect_contact", "email_notification",
		"      keywords: [refund, \"speak to the boss\"]\n", "      notification_email: care@example.com\n").Replace(contactAgentYAML)
}

func TestANegativeMessageEscalatesByEmail(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, sentimentYAML("Sentiment", "sentiment"))

	calm := w.chat(t, id, "", "This is bad")
	require.Nil(t, calm.Escalation)
	angry := w.chatAs(t, id, calm.ConversationID, "This is terrible and useless, I hate it", &converse.Contact{Email: "bob@example.com"})
	require.Equal(t, &converse.Escalation{Trigger: "sentiment", Action: "email_notification"}, angry.Escalation)
	require.Equal(t, converse.StatusOpen, angry.Status, "email_notification does not hand the conversation over")
	require.Contains(t, angry.Reply, "bob@example.com", "a reachable contact is not asked again")
	rulesAnswered(t, angry)
	require.False(t, w.conversation(t, calm.ConversationID).AwaitingContact)
	mails := w.notifications(t)
	require.Len(t, mails, 1)
	require.Equal(t, "care@example.com", mails[0].To)
	require.Contains(t, mails[0].Body, "I hate it")
	require.Contains(t, mails[0].Body, "bob@example.com")

	// A conversation escalates at most once.
	again := w.chat(t, id, calm.ConversationID, "Still terrible and useless, I hate it")
	require.Equal(t, "reply to: Still terrible and useless, I hate it", again.Reply)
	require.Len(t, w.notifications(t), 1)
}

func TestTwoFailedAttemptsInARowEscalate(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, sentimentYAML("Failing", "after_2_failed_attempts"))
	vendor := w.vendors[catalog.Beta]

	// One good turn between two failed ones resets the count.
	vendor.Push(llmtest.Reply{Text: "I'm sorry, I don't know."}, llmtest.Reply{Text: "We ship in 2 days."},
		llmtest.Reply{Text: "I'm sorry, I don't know."}, llmtest.Reply{Text: "Sorry, I couldn't find that."})
	a := w.chat(t, id, "", "Question 1")
	require.Equal(t, 1, w.conversation(t, a.ConversationID).FailedAttempts)
	for _, q := range []string{"Question 2", "Question 3"} {
		require.Nil(t, w.chat(t, id, a.ConversationID, q).Escalation, q)
	}
	require.Equal(t, 1, w.conversation(t, a.ConversationID).FailedAttempts)
	last := w.chat(t, id, a.ConversationID, "Question 4")
	require.Equal(t, &converse.Escalation{Trigger: "after_2_failed_attempts", Action: "email_notification"}, last.Escalation)
	require.True(t, strings.HasPrefix(last.Reply, "Sorry, I couldn't find that.\n\n"), last.Reply)
	require.Contains(t, last.Reply, "email address or phone number", "the escalation's message follows the model's reply")
	require.NotZero(t, last.Usage.TotalTokens, "the model answered this turn")
	state := w.conversation(t, a.ConversationID)
	require.Zero(t, state.FailedAttempts)
	require.True(t, state.AwaitingContact)
	mails := w.notifications(t)
	require.Len(t, mails, 1)
	require.Contains(t, mails[0].Subject, "after_2_failed_attempts")
	require.Contains(t, mails[0].Body, "Question 4")
	completed := w.events(t, "turn.completed")
	require.Equal(t, "after_2_failed_attempts", completed[len(completed)-1].Data["escalation"].(map[string]any)["trigger"])
}

// TestAnEscalationCommittedWithTheCallersWritesComesAfterTheTurn: a channel's turn commits
// the caller's writes with the turn (Request.Commit). When its model's answer escalates, the
// escalation's turn.completed is settled with the turn's own events, after them (as a turn
// without the caller's writes announces it, in a transaction after the turn's), not on its
// own before the turn's: in a group commit that settled the workspace ahead of the batch's
// locks, taken in id order.
func TestAnEscalationCommittedWithTheCallersWritesComesAfterTheTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t, "2026-11-23T10:00:00Z")
	id := w.agent(t, strings.NewReplacer("keyword_match", "after_2_failed_attempts", "      keywords: [refund, \"speak to the boss\"]\n", "").
		Replace(contactAgentYAML)) // collect_contact, no notification email
	w.vendors[catalog.Beta].Push(llmtest.Reply{Text: "I'm sorry, I don't know."}, llmtest.Reply{Text: "Sorry, I couldn't find that."})
	var committed []string
	chat := func(conv, message string) *converse.Answer {
		ans, err := w.svc.Chat(ctx, converse.Request{WorkspaceID: w.workspace.ID, AgentID: id, ConversationID: conv, Message: message,
			Commit: func(_ context.Context, _ *store.Tx, turn converse.Committed) ([]store.Settlement, error) {
				committed = append(committed, turn.Reply)
				return nil, nil
			}})
		require.NoError(t, err, message)
		return ans
	}
	first := chat("", "Question 1")
	last := chat(first.ConversationID, "Question 2")
	require.Equal(t, &converse.Escalation{Trigger: "after_2_failed_attempts", Action: "collect_contact"}, last.Escalation)
	require.Len(t, committed, 2)
	require.Equal(t, last.Reply, committed[1], "the caller's writes have the whole reply, the escalation's message included")

	var order []string
	for _, e := range w.allEvents(t) {
		if _, escalated := e.Data["escalation"]; escalated {
			e.Type += " (escalation)"
		}
		order = append(order, e.Type)
	}
	require.Equal(t, []string{"turn.completed", "spend.recorded", "turn.completed (escalation)"}, order[len(order)-3:],
		"the second turn's events, then its escalation's")
}
