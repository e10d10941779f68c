// Package converse is the runtime of deployed agents: it answers a message sent to an agent
// (POST /api/agents/{id}/chat, and every channel after it) with the agent's persona, model,
// knowledge, business rules, labels, escalation and tools.
//
// A turn goes through the rules first, in this order, and the first that applies answers
// without calling the model:
//
//  1. a closed conversation refuses the message (409 conversation_closed);
//  2. a conversation a person holds (package inbox: they claimed it) is not answered by the
//     agent: the message is stored for them and the reply is empty, until they release it;
//     a conversation handed to a human (transfer_to_human) that nobody claimed is not
//     answered either, until the pickup timeout has passed; then the visitor is told once,
//     and asked for contact details;
//  3. when the agent asked for contact details, the message is read for them (an email
//     address, a phone number of 7 to 15 digits, a name after "my name is", "I am", "I'm",
//     "this is" or "name:"); if it holds an email or a phone they are stored on the
//     conversation's contact and the agent thanks the visitor; otherwise the turn goes on
//     (and the next message is read again);
//  4. outside business hours (see Open) the reply is the after-hours message;
//  5. a message containing a blocked topic (whole words, any case, see containsPhrase) gets a
//     fixed refusal;
//  6. an enabled escalation whose trigger is user_request (HumanRequestPhrases),
//     keyword_match (the blueprint's keywords, or DefaultEscalationKeywords) or sentiment
//     (Sentiment at or below SentimentThreshold) fires on the message.
//
// Otherwise the model answers through agent.Pipeline (tool loop, metering, messages and
// events). A model turn fails when every knowledge search it ran found nothing, or when the
// reply says it cannot help (CannotHelpPhrases); a turn that does not fail resets the count.
// Two failed turns in a row fire an after_2_failed_attempts escalation, whose message follows
// the model's reply. A conversation escalates at most once.
//
// The escalation actions: transfer_to_human sets the status `escalated` and the agent stops
// answering (rule 2); collect_contact asks for name and email or phone (rule 3), unless the
// contact is already reachable; email_notification emails notification_email a summary (the
// last messages of the conversation and the contact), and asks for contact details like
// collect_contact. Whatever the action, notification_email (when set) receives the summary,
// and again when contact details arrive; the mail goes out through a durable job over
// SMTP_URL. The turn's turn.completed event carries `escalation` {trigger, action, summary}
// and the new `status`, for the dashboard.
package converse

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/manage"
	"switchboard/netguard"
	"switchboard/store"
)

// Conversation statuses.
const (
	StatusOpen      = "open"
	StatusEscalated = "escalated"
	StatusClosed    = "closed"
)

// MaxMessageChars bounds a message, in characters.
const MaxMessageChars = 4000

// DefaultPickupTimeout is how long a transfer_to_human waits for a human when the blueprint
// sets no pickup_timeout_minutes.
const DefaultPickupTimeout = 5 * time.Minute

// Fixed replies of the rules.
const (
	DefaultAfterHoursMessage = "We are closed right now. Please come back during our opening hours."
	BlockedTopicReply        = "I'm sorry, I can't discuss that topic. Is there something else I can help you with?"
	askContact               = "Could you give me your name and an email address or phone number?"
)

// Service answers messages of deployed agents.
type Service struct {
	store    *store.Store
	catalog  *catalog.Catalog
	pipeline *agent.Pipeline
	guard    netguard.Guard
	jobs     *river.Client[pgx.Tx]
	now      func() time.Time
	log      *slog.Logger
}

// New returns the runtime. now is the clock (time.Now when nil); tests pin it. jobs inserts
// the notification emails (NotifyArgs).
func New(st *store.Store, cat *catalog.Catalog, pipeline *agent.Pipeline, guard netguard.Guard, jobs *river.Client[pgx.Tx], now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: st, catalog: cat, pipeline: pipeline, guard: guard, jobs: jobs, now: now, log: log}
}

// Contact is what a caller tells about the visitor.
type Contact struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	Phone string `json:"phone,omitempty"`
}

// Request is one message to an agent.
type Request struct {
	WorkspaceID    uuid.UUID
	AgentID        uuid.UUID
	Message        string
	ConversationID string // continue this conversation of the agent; "" opens one
	Contact        *Contact
	Channel        string // the conversation's channel when one is opened; "api" by default
	// ContactID is the known contact of a conversation this message opens (a channel found
	// them by their phone number); Contact, when also given, is merged into it.
	ContactID *uuid.UUID
	// Thread ties a conversation this message opens to its channel and remote party, so that
	// their next message continues it.
	Thread *Thread
	// SkipGreeting opens a conversation without the persona's greeting: on channels where
	// the person writes first (SMS), the reply is the first thing they get.
	SkipGreeting bool
	// OnConversation receives the conversation id before anything else happens.
	OnConversation func(id string) error
	// OnDelta receives the reply as it is produced.
	OnDelta func(string) error
}

// Thread is a conversation's channel and remote party (a texter's E.164 number).
type Thread struct {
	ChannelID uuid.UUID
	Remote    string
}

// Answer is the reply to one message.
type Answer struct {
	ConversationID string      `json:"conversation_id"`
	Reply          string      `json:"reply"`
	Labels         []string    `json:"labels"`
	Escalation     *Escalation `json:"escalation"`
	Status         string      `json:"status"`
	Usage          Usage       `json:"usage"`
}

// Escalation is the escalation a conversation went through.
type Escalation struct {
	Trigger string `json:"trigger"`
	Action  string `json:"action"`
}

// Usage is the tokens the turn's model calls used (zero when a rule answered).
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// turnContext is what one turn works with.
type turnContext struct {
	ctx   context.Context
	agent store.Agent
	bp    *blueprint.Agent
	conv  store.AgentConversation
	now   time.Time
}

// outcome is what the rules (or the escalation after a model turn) decided.
type outcome struct {
	reply   string
	rule    string // which rule answered: after_hours, blocked_topic, escalation, ...
	flow    store.ConversationFlow
	contact *store.Contact // details to merge into the conversation's contact
	fired   *fired
	notify  string // a notification email to send (its subject), with the summary
}

type fired struct {
	trigger, action string
}

// Chat answers one message.
func (s *Service) Chat(ctx context.Context, req Request) (*Answer, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	a, err := s.store.AgentByID(ctx, req.WorkspaceID, req.AgentID)
	if err != nil {
		return nil, apierr.WithParam(err, "id")
	}
	if a.Status != string(manage.AgentEnabled) {
		return nil, apierr.Conflict("agent_disabled", "The agent %q is disabled, so it does not reply. Enable it with update_agent (status: enabled).", a.Name)
	}
	var bp blueprint.Blueprint
	if err := json.Unmarshal(a.Blueprint, &bp); err != nil {
		return nil, fmt.Errorf("stored blueprint of agent %s: %w", a.ID, err)
	}
	conv, err := s.conversation(ctx, a, &bp, req)
	if err != nil {
		return nil, err
	}
	if req.OnConversation != nil {
		if err := req.OnConversation(conv.ShortID); err != nil {
			return nil, err
		}
	}
	tc := turnContext{ctx: ctx, agent: a, bp: &bp.Agent, conv: conv, now: s.now()}
	out, err := s.rules(tc, req.Message)
	if err != nil {
		return nil, err
	}
	if out != nil {
		if out.reply != "" && req.OnDelta != nil {
			if err := req.OnDelta(out.reply); err != nil {
				return nil, err
			}
		}
		if err := s.commit(tc, req.Message, out); err != nil {
			return nil, err
		}
		return s.answer(tc, out.reply, out.flow, conv.Labels, llm.Usage{}), nil
	}
	return s.modelTurn(tc, req)
}

func validate(req Request) error {
	if n := utf8.RuneCountInString(req.Message); strings.TrimSpace(req.Message) == "" || n > MaxMessageChars {
		return apierr.Invalid("message", "invalid_value", "message must be 1 to %d characters, and not only spaces.", MaxMessageChars)
	}
	if c := req.Contact; c != nil {
		if utf8.RuneCountInString(c.Name) > 100 {
			return apierr.Invalid("contact.name", "invalid_value", "contact.name must be at most 100 characters.")
		}
		if c.Email != "" {
			if addr, err := mail.ParseAddress(c.Email); err != nil || addr.Address != c.Email || len(c.Email) > 254 {
				return apierr.Invalid("contact.email", "invalid_value", "contact.email must be an email address such as ada@example.com.")
			}
		}
		if c.Phone != "" && phonePattern.FindString(c.Phone) != strings.TrimSpace(c.Phone) {
			return apierr.Invalid("contact.phone", "invalid_value", "contact.phone must be a phone number of 7 to 15 digits, such as +1 555 010 2030.")
		}
	}
	return nil
}

// conversation continues the requested conversation of the agent, or opens one: the greeting
// is its first message, then the disclosure when it applies, with conversation.created.
func (s *Service) conversation(ctx context.Context, a store.Agent, bp *blueprint.Blueprint, req Request) (store.AgentConversation, error) {
	contact := storeContact(req.Contact)
	if req.ConversationID != "" {
		ref, err := s.store.ConversationByRef(ctx, a.WorkspaceID, req.ConversationID)
		if err != nil {
			return store.AgentConversation{}, apierr.WithParam(err, "conversation_id")
		}
		conv, err := s.store.AgentConversationState(ctx, a.WorkspaceID, ref.ID)
		if err != nil {
			return conv, apierr.WithParam(err, "conversation_id")
		}
		if conv.AgentID == nil || *conv.AgentID != a.ID {
			return conv, apierr.NotFound("conversation_id", "conversation_not_found", "This agent has no conversation %q.", req.ConversationID)
		}
		if contact != nil {
			err := s.store.InTx(ctx, func(tx *store.Tx) error { return mergeContact(ctx, tx, a.WorkspaceID, &conv, *contact) })
			if err != nil {
				return conv, err
			}
		}
		return conv, nil
	}
	deployed, err := s.store.AgentDeployments(ctx, a.WorkspaceID, a.ID)
	if err != nil {
		return store.AgentConversation{}, err
	}
	channel := req.Channel
	if channel == "" {
		channel = "api"
	}
	disclosure := manage.DisclosureFor(a, bp, deployed, channel)
	var id uuid.UUID
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		conv, err := tx.CreateConversation(ctx, a.WorkspaceID, channel)
		if err != nil {
			return err
		}
		id = conv.ID
		contactID := req.ContactID
		switch {
		case contactID != nil && contact != nil:
			if err := tx.MergeContact(ctx, a.WorkspaceID, *contactID, *contact); err != nil {
				return err
			}
		case contact != nil:
			cid, err := tx.CreateContact(ctx, a.WorkspaceID, *contact)
			if err != nil {
				return err
			}
			contactID = &cid
		}
		if req.Thread != nil {
			if err := tx.AddThread(ctx, a.WorkspaceID, conv.ID, req.Thread.ChannelID, req.Thread.Remote); err != nil {
				return err
			}
		}
		var msgs []store.Message
		if !req.SkipGreeting {
			msgs = append(msgs, store.Message{Role: string(llm.RoleAssistant), Content: bp.Agent.Persona.Greeting})
		}
		var disclosedAt *time.Time
		if disclosure.Applies {
			now := s.now()
			disclosedAt = &now
			msgs = append(msgs, store.Message{Role: string(llm.RoleAssistant), Content: disclosure.SpokenText})
		}
		if err := tx.OpenAgentConversation(ctx, a.WorkspaceID, conv.ID, a.ID, contactID, disclosedAt); err != nil {
			return err
		}
		if len(msgs) > 0 {
			if err := tx.AppendMessages(ctx, a.WorkspaceID, conv.ID, msgs); err != nil {
				return err
			}
		}
		data := map[string]any{"conversation_id": conv.ShortID, "channel": conv.Channel, "agent_id": a.ID.String()}
		if contactID != nil {
			data["contact_id"] = contactID.String()
		}
		_, _, err = tx.Settle(ctx, a.WorkspaceID, nil, func(int64) []store.NewEvent {
			return []store.NewEvent{{Type: "conversation.created", Data: data}}
		})
		return err
	})
	if err != nil {
		return store.AgentConversation{}, err
	}
	return s.store.AgentConversationState(ctx, a.WorkspaceID, id)
}

func storeContact(c *Contact) *store.Contact {
	if c == nil {
		return nil
	}
	out := store.Contact{Name: nonEmpty(c.Name), Email: nonEmpty(c.Email), Phone: nonEmpty(c.Phone)}
	if out.Empty() {
		return nil
	}
	return &out
}

func nonEmpty(s string) *string {
	if s = strings.TrimSpace(s); s == "" {
		return nil
	}
	return &s
}

// mergeContact fills in the conversation's contact, creating it when it has none.
func mergeContact(ctx context.Context, tx *store.Tx, ws uuid.UUID, conv *store.AgentConversation, c store.Contact) error {
	if conv.ContactID == nil {
		id, err := tx.CreateContact(ctx, ws, c)
		if err != nil {
			return err
		}
		conv.ContactID = &id
		if err := tx.SetConversationContact(ctx, ws, conv.ID, id); err != nil {
			return err
		}
	} else if err := tx.MergeContact(ctx, ws, *conv.ContactID, c); err != nil {
		return err
	}
	merge := func(dst **string, src *string) {
		if src != nil {
			*dst = src
		}
	}
	merge(&conv.Contact.Name, c.Name)
	merge(&conv.Contact.Email, c.Email)
	merge(&conv.Contact.Phone, c.Phone)
	return nil
}

// flowOf is the conversation's state as a turn starts.
func flowOf(c store.AgentConversation) store.ConversationFlow {
	return store.ConversationFlow{Status: c.Status, EscalationTrigger: c.EscalationTrigger, EscalationAction: c.EscalationAction,
		EscalatedAt: c.EscalatedAt, FailedAttempts: c.FailedAttempts, AwaitingContact: c.AwaitingContact,
		PickupTimedOutAt: c.PickupTimedOutAt}
}

// rules applies the rules that answer without the model (see the package comment); nil
// means the model answers.
func (s *Service) rules(tc turnContext, message string) (*outcome, error) {
	conv := tc.conv
	flow := flowOf(conv)
	out := &outcome{flow: flow}
	if conv.Status == StatusClosed {
		return nil, apierr.Conflict("conversation_closed", "The conversation %s is closed; start a new one (leave conversation_id out).", conv.ShortID)
	}
	if conv.AssigneeUserID != nil {
		// A person holds the conversation (the team inbox): the message is theirs to
		// answer, contact details included.
		out.rule = "held_by_person"
		return out, nil
	}
	if conv.AwaitingContact {
		name, email, phone := extractContact(message)
		if email != "" || phone != "" {
			c := store.Contact{Name: nonEmpty(name), Email: nonEmpty(email), Phone: nonEmpty(phone)}
			out.contact = &c
			out.flow.AwaitingContact = false
			out.rule = "contact_collected"
			out.reply = "Thank you" + greetName(name, conv.Contact.Name) + ". Our team will get back to you at " + firstOf(email, phone) + "."
			if escalationEmail(tc.bp) != "" {
				out.notify = "Contact details received"
			}
			return out, nil
		}
		if conv.Status == StatusEscalated {
			out.rule = "contact_requested"
			out.reply = "So that our team can get back to you: " + askContact
			return out, nil
		}
	}
	if conv.Status == StatusEscalated {
		out.rule = "handed_to_human"
		if conv.PickupTimedOutAt == nil && conv.EscalatedAt != nil && tc.now.Sub(*conv.EscalatedAt) >= pickupTimeout(tc.bp) {
			now := tc.now
			out.flow.PickupTimedOutAt = &now
			out.rule = "pickup_timed_out"
			if conv.Contact.Reachable() {
				out.reply = "I'm sorry, nobody from our team is free right now. They will get back to you at " + firstOf(deref(conv.Contact.Email), deref(conv.Contact.Phone)) + "."
			} else {
				out.reply = "I'm sorry, nobody from our team is free right now. " + askContact + " They will get back to you."
				out.flow.AwaitingContact = true
			}
		}
		return out, nil
	}
	r := tc.bp.BusinessRules
	if r != nil {
		open, err := Open(r.BusinessHours, tc.now)
		if err != nil {
			return nil, err
		}
		if !open {
			out.rule = "after_hours"
			out.reply = r.BusinessHours.AfterHoursMessage
			if out.reply == "" {
				out.reply = DefaultAfterHoursMessage
			}
			return out, nil
		}
		ws := words(message)
		if topic := firstPhrase(ws, r.BlockedTopics); topic != "" {
			out.rule = "blocked_topic"
			out.reply = BlockedTopicReply
			return out, nil
		}
		if e := r.Escalation; enabled(e) && conv.EscalatedAt == nil && messageTriggers(e, ws, message) {
			s.escalate(tc, string(e.Trigger), out)
			return out, nil
		}
	}
	return nil, nil
}

func enabled(e *blueprint.Escalation) bool {
	return e != nil && e.Enabled != nil && *e.Enabled && e.Trigger != "" && e.Action != ""
}

// messageTriggers reports whether a message fires a message-based escalation trigger.
func messageTriggers(e *blueprint.Escalation, ws []string, message string) bool {
	switch e.Trigger {
	case blueprint.TriggerUserRequest:
		return firstPhrase(ws, HumanRequestPhrases) != ""
	case blueprint.TriggerKeywordMatch:
		keywords := e.Keywords
		if len(keywords) == 0 {
			keywords = DefaultEscalationKeywords
		}
		return firstPhrase(ws, keywords) != ""
	case blueprint.TriggerSentiment:
		return Sentiment(message) <= SentimentThreshold
	}
	return false
}

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

func greetName(name string, known *string) string {
	if name == "" && known != nil {
		name = *known
	}
	if name == "" {
		return ""
	}
	return ", " + name
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// commit stores a turn the rules answered: the message, the reply (none when the agent stays
// silent), the contact and the conversation's state, the notification job and
// turn.completed, in one transaction. Nothing is charged: no model was called.
func (s *Service) commit(tc turnContext, message string, out *outcome) error {
	ctx, ws := tc.ctx, tc.agent.WorkspaceID
	conv := tc.conv
	msgs := []store.Message{{Role: string(llm.RoleUser), Content: message}}
	if out.reply != "" {
		msgs = append(msgs, store.Message{Role: string(llm.RoleAssistant), Content: out.reply})
	}
	return s.store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.AppendMessages(ctx, ws, conv.ID, msgs); err != nil {
			return err
		}
		return s.settleOutcome(tc, tx, &conv, out, true)
	})
}

// settleOutcome writes what an outcome changes, inside tx, and appends its turn.completed.
func (s *Service) settleOutcome(tc turnContext, tx *store.Tx, conv *store.AgentConversation, out *outcome, finish bool) error {
	ctx, ws := tc.ctx, tc.agent.WorkspaceID
	if out.contact != nil {
		if err := mergeContact(ctx, tx, ws, conv, *out.contact); err != nil {
			return err
		}
	}
	if err := tx.SetConversationFlow(ctx, ws, conv.ID, out.flow); err != nil {
		return err
	}
	var summary string
	if out.fired != nil || out.notify != "" {
		var err error
		if summary, err = s.summary(ctx, tx, tc, conv); err != nil {
			return err
		}
	}
	if out.fired != nil {
		if err := tx.SetEscalationSummary(ctx, ws, conv.ID, summary); err != nil {
			return err
		}
	}
	if out.notify != "" {
		args := NotifyArgs{WorkspaceID: ws, To: escalationEmail(tc.bp),
			Subject: out.notify + ": " + tc.agent.Name + ", conversation " + conv.ShortID, Body: summary}
		if _, err := s.jobs.InsertTx(ctx, tx.Pgx(), args, nil); err != nil {
			return err
		}
	}
	if !finish {
		return nil
	}
	data := map[string]any{"conversation_id": conv.ShortID, "surface": "agent", "agent_id": tc.agent.ID.String(),
		"reply_preview": preview(out.reply), "finish_reason": string(llm.FinishStop), "model": tc.bp.LLM.Model,
		"handled_by": out.rule, "status": out.flow.Status}
	if out.fired != nil {
		data["escalation"] = map[string]any{"trigger": out.fired.trigger, "action": out.fired.action, "summary": summary}
	}
	_, _, err := tx.Settle(ctx, ws, nil, func(int64) []store.NewEvent {
		return []store.NewEvent{{Type: "turn.completed", Data: data}}
	})
	return err
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

func preview(s string) string { return truncate(s, 200) }

// modelTurn lets the agent's model answer, then counts failed attempts and fires an
// after_2_failed_attempts escalation when due.
func (s *Service) modelTurn(tc turnContext, req Request) (*Answer, error) {
	notes := &turnNotes{}
	tools, err := s.tools(tc, notes)
	if err != nil {
		return nil, err
	}
	offered := map[blueprint.ToolType]bool{}
	for _, t := range tc.bp.Tools {
		offered[t.Type] = offered[t.Type] || t.Enabled
	}
	temperature := *tc.bp.LLM.Temperature
	conv := tc.conv.Conversation
	res, err := s.pipeline.Run(tc.ctx, agent.Turn{WorkspaceID: tc.agent.WorkspaceID, Model: tc.bp.LLM.Model, Surface: "agent",
		Conversation: &conv, Text: req.Message, Persist: true, OnDelta: req.OnDelta,
		System: systemPrompt(tc.bp, offered), Tools: tools, Temperature: &temperature, MaxTokens: *tc.bp.LLM.MaxTokens,
		AgentID: &tc.agent.ID})
	if err != nil {
		return nil, err
	}
	out := &outcome{flow: flowOf(tc.conv)}
	if notes.searchedInVain() || cannotHelp(res.Text) {
		out.flow.FailedAttempts++
	} else {
		out.flow.FailedAttempts = 0
	}
	if e := escalation(tc.bp); enabled(e) && e.Trigger == blueprint.TriggerAfter2FailedAttempts &&
		tc.conv.EscalatedAt == nil && out.flow.FailedAttempts >= 2 {
		s.escalate(tc, string(e.Trigger), out)
		out.flow.FailedAttempts = 0
	}
	reply := res.Text
	if out.fired != nil {
		sep := "\n\n"
		if reply == "" {
			sep = ""
		}
		if req.OnDelta != nil {
			if err := req.OnDelta(sep + out.reply); err != nil {
				return nil, err
			}
		}
		reply += sep + out.reply
	}
	c := tc.conv
	err = s.store.InTx(tc.ctx, func(tx *store.Tx) error {
		if out.fired != nil {
			msg := store.Message{Role: string(llm.RoleAssistant), Content: out.reply}
			if err := tx.AppendMessages(tc.ctx, tc.agent.WorkspaceID, c.ID, []store.Message{msg}); err != nil {
				return err
			}
		}
		return s.settleOutcome(tc, tx, &c, out, out.fired != nil)
	})
	if err != nil {
		return nil, err
	}
	labels := tc.conv.Labels
	if notes.labels != nil {
		labels = notes.labels
	}
	return s.answer(tc, reply, out.flow, labels, res.Usage), nil
}

func (s *Service) answer(tc turnContext, reply string, flow store.ConversationFlow, labels []string, u llm.Usage) *Answer {
	a := &Answer{ConversationID: tc.conv.ShortID, Reply: reply, Labels: labels, Status: flow.Status,
		Usage: Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}}
	if a.Labels == nil {
		a.Labels = []string{}
	}
	if flow.EscalationTrigger != nil {
		a.Escalation = &Escalation{Trigger: *flow.EscalationTrigger, Action: deref(flow.EscalationAction)}
	}
	return a
}
