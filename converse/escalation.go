package converse

import (
	"context"
	"fmt"
	"strings"
	"time"

	"switchboard/blueprint"
	"switchboard/llm"
	"switchboard/store"
)

// DefaultPickupTimeout is how long a transfer_to_human waits for a human when the blueprint
// sets no pickup_timeout_minutes.
const DefaultPickupTimeout = 5 * time.Minute

// escalation is the agent's escalation settings, nil when it has none.
func escalation(a *blueprint.Agent) *blueprint.Escalation {
	if a.BusinessRules == nil {
		return nil
	}
	return a.BusinessRules.Escalation
}

func pickupTimeout(a *blueprint.Agent) time.Duration {
	if e := escalation(a); e != nil && e.PickupTimeoutMinutes != nil {
		return time.Duration(*e.PickupTimeoutMinutes) * time.Minute
	}
	return DefaultPickupTimeout
}

func escalationEmail(a *blueprint.Agent) string {
	if e := escalation(a); e != nil {
		return e.NotificationEmail
	}
	return ""
}

// escalate fires the agent's escalation action into out.
func (s *Service) escalate(tc turnContext, trigger string, out *outcome) {
	e := escalation(tc.bp)
	now := tc.now
	action := string(e.Action)
	out.rule = "escalation"
	out.flow.EscalationTrigger, out.flow.EscalationAction, out.flow.EscalatedAt = &trigger, &action, &now
	out.fired = &fired{trigger: trigger, action: action}
	reachable := tc.conv.Contact.Reachable()
	switch e.Action {
	case blueprint.ActionTransferToHuman:
		out.flow.Status = StatusEscalated
		out.reply = "I'm handing this conversation to a member of our team. Please stay here: they will reply in this conversation."
	case blueprint.ActionCollectContact, blueprint.ActionEmailNotification:
		out.reply = "I've asked a member of our team to get back to you."
		if reachable {
			out.reply = strings.TrimSuffix(out.reply, ".") + " at " + firstOf(deref(tc.conv.Contact.Email), deref(tc.conv.Contact.Phone)) + "."
		} else {
			out.reply += " " + askContact
			out.flow.AwaitingContact = true
		}
	}
	if e.NotificationEmail != "" {
		out.notify = "Escalation (" + trigger + ", " + action + ")"
	}
}

// summaryLines is how many of the last messages a handoff summary quotes.
const summaryLines = 12

// summary is the short account of a conversation a human gets on a handoff: the agent, the
// contact, and the last messages (each cut to 300 characters), written within tx so it
// includes the turn being committed.
func (s *Service) summary(ctx context.Context, tx *store.Tx, tc turnContext, conv *store.AgentConversation) (string, error) {
	lines, err := tx.Transcript(ctx, tc.agent.WorkspaceID, conv.ID)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Agent: %s\nConversation: %s (started %s)\n", tc.agent.Name, conv.ShortID, conv.CreatedAt.UTC().Format(time.RFC3339))
	if esc := conv.EscalationTrigger; esc != nil {
		fmt.Fprintf(&b, "Escalation: %s, %s\n", *esc, deref(conv.EscalationAction))
	}
	c := conv.Contact
	if c.Empty() {
		b.WriteString("Contact: not known yet\n")
	} else {
		fmt.Fprintf(&b, "Contact: %s, email %s, phone %s\n", orDash(c.Name), orDash(c.Email), orDash(c.Phone))
	}
	if len(lines) > summaryLines {
		fmt.Fprintf(&b, "\nLast %d of %d messages:\n", summaryLines, len(lines))
		lines = lines[len(lines)-summaryLines:]
	} else {
		b.WriteString("\nMessages:\n")
	}
	for _, l := range lines {
		who := "Visitor"
		if l.Role == string(llm.RoleAssistant) {
			who = tc.bp.Persona.DisplayName
		}
		fmt.Fprintf(&b, "%s: %s\n", who, truncate(strings.Join(strings.Fields(l.Content), " "), 300))
	}
	return b.String(), nil
}

func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
