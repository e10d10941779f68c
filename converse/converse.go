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
	"errors"
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

// Service answers messages of deployed agents.
type Service struct {
	store    *store.Store
	catalog  *catalog.Catalog
	pipeline *agent.Pipeline
	guard    netguard.Guard
	jobs     *river.Client[pgx.Tx]
	now      func() time.Time
	log      *slog.Logger
	agents   agentCache   // the agents of recent turns, kept while their rows are unchanged
	history  historyCache // the history windows of recent turns, kept while their rows are unchanged
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
	// Agent and Conversation, when set, are what the caller has just read (a channel's
	// reply job): the agent AgentID names, and the id of ConversationID's conversation. They
	// are not read again.
	Agent        *store.Agent
	Conversation *uuid.UUID
	Contact      *Contact
	Channel      string // the conversation's channel when one is opened; "api" by default
	// ContactID is the known contact of a conversation this message opens (a channel found
	// them by their phone number); Contact, when also given, is merged into it.
	ContactID *uuid.UUID
	// Thread ties a conversation this message opens to its channel and remote party, so that
	// their next message continues it.
	Thread *Thread
	// SkipGreeting opens a conversation without the persona's greeting: on channels where
	// the person writes first (SMS), the reply is the first thing they get.
	SkipGreeting bool
	// Instructions are the channel's own, added to the system prompt (a phone call's: the
	// reply is spoken, so short plain sentences).
	Instructions string
	// OnConversation receives the conversation id before anything else happens.
	OnConversation func(id string) error
	// OnDelta receives the reply as it is produced.
	OnDelta func(string) error
	// Commit, when set, is the caller's writes in the transaction that stores the turn (the
	// model's, or a rule's): a channel records there that its inbound message is answered,
	// with the reply to send, so that a rerun after a crash finds the answer instead of
	// asking the model again. The settlements it returns (the channel's charge for the
	// message) are settled in that transaction. It may run again if the transaction is
	// retried: it decides from its arguments alone.
	Commit func(ctx context.Context, tx *store.Tx, turn Committed) ([]store.Settlement, error)
}

// Committed is a turn as its transaction writes it, for Request.Commit.
type Committed struct {
	ConversationID uuid.UUID
	ShortID        string
	Reply          string // the whole reply (the model's and an escalation's); "" when the agent is silent
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
	// history is conv's history window as read with its state; system the system prompt.
	history *agent.History
	search  *store.SearchPlan // the plan of the search before the model call, read with conv
	system  string
	now     time.Time
	opened  []store.NewEvent // conversation.created of a conversation this turn opened, for its transaction
	// settled is set once the turn's transaction committed, opened with it.
	settled *bool
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
	a, bp, st, opened, err := s.begin(ctx, req, true)
	if errors.Is(err, errStaleAgent) {
		// The kept copy of the agent is not the row's version: forget it, and read the row.
		s.agents.forget(req.AgentID)
		a, bp, st, opened, err = s.begin(ctx, req, false)
	}
	if err != nil {
		return nil, err
	}
	settled := false
	answer, err := s.chat(ctx, req, a, &bp, st, opened, &settled)
	if err != nil && len(opened) > 0 && !settled {
		// The turn's transaction did not commit, so the opening's event is settled on its own.
		if _, serr := s.store.AppendEvents(context.WithoutCancel(ctx), a.WorkspaceID, opened); serr != nil {
			s.log.ErrorContext(ctx, "settling conversation.created after a failed turn", "error", serr.Error())
		}
	}
	return answer, err
}

// begin reads the agent (or takes its kept copy when cached is true: agentCache) and the
// conversation, opening it when the message opens one. It returns errStaleAgent, having read
// and written nothing else, when the copy is not the agent's current row.
func (s *Service) begin(ctx context.Context, req Request, cached bool) (a store.Agent, bp blueprint.Blueprint, st turnState, opened []store.NewEvent, err error) {
	a, bp, version, err := s.turnAgent(ctx, req, cached)
	if err != nil {
		return a, bp, st, nil, err
	}
	system := withInstructions(systemPrompt(&bp.Agent, offeredTools(&bp.Agent)), req.Instructions)
	st, err = s.conversation(ctx, a, &bp, req, &opened, s.historyWindow(&bp.Agent, system, req.Message), version)
	st.system = system
	return a, bp, st, opened, err
}

// turnState is what Chat read and worked out before the rules: the conversation, its history
// window, the plan of the search before the model call (nil: none was read) and the system
// prompt.
type turnState struct {
	conv    store.AgentConversation
	history *agent.History
	search  *store.SearchPlan
	system  string
}

// offeredTools are the tool types the blueprint enables.
func offeredTools(bp *blueprint.Agent) map[blueprint.ToolType]bool {
	offered := map[blueprint.ToolType]bool{}
	for _, t := range bp.Tools {
		offered[t.Type] = offered[t.Type] || t.Enabled
	}
	return offered
}

// historyWindow is the agent.HistoryWindow of the model turn this message would run (its
// system prompt, the message, no seed), read with the conversation's state so that the
// pipeline need not read it again (agent.Turn.History).
func (s *Service) historyWindow(bp *blueprint.Agent, system, message string) int64 {
	model, _ := s.catalog.Lookup(bp.LLM.Model) // an unknown model fails the model turn: any window does
	maxTokens := 0
	if bp.LLM.MaxTokens != nil {
		maxTokens = *bp.LLM.MaxTokens
	}
	window := agent.HistoryWindow(model, agent.Turn{System: system, Text: message, MaxTokens: maxTokens})
	if prefetchSearch(bp) {
		window = max(window-prefetchReserve, 0)
	}
	return window
}

// prefetchSearch reports whether the blueprint's turns search the knowledge base before the
// model is asked (Service.prefetch).
func prefetchSearch(bp *blueprint.Agent) bool {
	for _, t := range bp.Tools {
		if t.Enabled && t.Type == blueprint.ToolSearchKnowledgeBase {
			return prefetches(t)
		}
	}
	return false
}

// chat answers one message in st's conversation. opened are the events of its opening (none
// when it was continued), settled in the turn's transaction.
func (s *Service) chat(ctx context.Context, req Request, a store.Agent, bp *blueprint.Blueprint, st turnState, opened []store.NewEvent, settled *bool) (*Answer, error) {
	conv := st.conv
	if req.OnConversation != nil {
		if err := req.OnConversation(conv.ShortID); err != nil {
			return nil, err
		}
	}
	tc := turnContext{ctx: ctx, agent: a, bp: &bp.Agent, conv: conv, history: st.history, search: st.search, system: st.system, now: s.now(), opened: opened, settled: settled}
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
		if err := s.commit(tc, req, out); err != nil {
			return nil, err
		}
		*tc.settled = true
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

// modelTurn lets the agent's model answer, then counts failed attempts and fires an
// after_2_failed_attempts escalation when due.
func (s *Service) modelTurn(tc turnContext, req Request) (*Answer, error) {
	notes := &turnNotes{}
	tools, search, err := s.tools(tc, notes)
	if err != nil {
		return nil, err
	}
	prelude, err := s.prefetch(tc, notes, search.prefetch, req.Message)
	if err != nil {
		return nil, err
	}
	temperature := *tc.bp.LLM.Temperature
	conv := tc.conv.Conversation
	var out *outcome
	var reply string
	turn := agent.Turn{WorkspaceID: tc.agent.WorkspaceID, Model: tc.bp.LLM.Model, Surface: "agent",
		Conversation: &conv, Text: req.Message, Persist: true, OnDelta: req.OnDelta,
		System: tc.system, Tools: tools, Temperature: &temperature, MaxTokens: *tc.bp.LLM.MaxTokens,
		AgentID: &tc.agent.ID, Opened: tc.opened, History: tc.history, Prelude: prelude}
	if len(search.names) > 0 {
		turn.Recall = recallSearches(search.names)
	}
	tc.opened = nil // the pipeline settles them; an escalation's turn.completed comes after
	if req.Commit != nil {
		// The outcome is written with the turn, and the caller's writes with both.
		turn.Also = func(ctx context.Context, tx *store.Tx, res *agent.Outcome) ([]store.Settlement, error) {
			out, reply = s.decide(tc, notes, res.Text)
			items, err := s.writeOutcome(tc, tx, out)
			if err != nil {
				return nil, err
			}
			more, err := req.Commit(ctx, tx, Committed{ConversationID: conv.ID, ShortID: conv.ShortID, Reply: reply})
			return append(items, more...), err
		}
	}
	res, err := s.pipeline.Run(tc.ctx, turn)
	if err != nil {
		return nil, err
	}
	*tc.settled = true // the turn committed, and conversation.created with it
	if appended, err := res.Appended(); err == nil {
		s.history.extend(tc.agent.WorkspaceID, conv.ID, appended)
	}
	if req.Commit == nil {
		out, reply = s.decide(tc, notes, res.Text)
		// The usual turn changes nothing of the conversation's state (no escalation, the
		// failed attempts still 0): then there is nothing to write, and no transaction of its
		// own to wait for after the turn's (its messages already moved updated_at).
		if !out.unchanged(tc.conv) {
			if err := s.store.InTx(tc.ctx, func(tx *store.Tx) error {
				items, err := s.writeOutcome(tc, tx, out)
				if err != nil || len(items) == 0 {
					return err
				}
				return tx.SettleMany(tc.ctx, tc.agent.WorkspaceID, items)
			}); err != nil {
				return nil, err
			}
		}
	}
	if out.fired != nil && req.OnDelta != nil {
		if err := req.OnDelta(strings.TrimPrefix(reply, res.Text)); err != nil {
			return nil, err
		}
	}
	labels := tc.conv.Labels
	if notes.labels != nil {
		labels = notes.labels
	}
	return s.answer(tc, reply, out.flow, labels, res.Usage), nil
}

// decide counts a model turn's failed attempts and fires an after_2_failed_attempts
// escalation when due; the reply is the model's text followed by the escalation's message.
func (s *Service) decide(tc turnContext, notes *turnNotes, text string) (*outcome, string) {
	out := &outcome{flow: flowOf(tc.conv)}
	if notes.searchedInVain() || cannotHelp(text) {
		out.flow.FailedAttempts++
	} else {
		out.flow.FailedAttempts = 0
	}
	if e := escalation(tc.bp); enabled(e) && e.Trigger == blueprint.TriggerAfter2FailedAttempts &&
		tc.conv.EscalatedAt == nil && out.flow.FailedAttempts >= 2 {
		s.escalate(tc, string(e.Trigger), out)
		out.flow.FailedAttempts = 0
	}
	if out.fired == nil {
		return out, text
	}
	if text == "" {
		return out, out.reply
	}
	return out, text + "\n\n" + out.reply
}

// writeOutcome writes what a model turn's outcome changes: the escalation's message and the
// conversation's state; when an escalation fired, it returns its turn.completed to settle.
func (s *Service) writeOutcome(tc turnContext, tx *store.Tx, out *outcome) ([]store.Settlement, error) {
	c := tc.conv
	// A model turn's outcome collects no contact (decide), so the turn's append locking the
	// conversation first (the group commit, Also) is not the order mergeOutcomeContact wants.
	if err := mergeOutcomeContact(tc, tx, &c, out); err != nil {
		return nil, err
	}
	if out.fired != nil {
		msg := store.Message{Role: string(llm.RoleAssistant), Content: out.reply}
		if err := tx.AppendMessages(tc.ctx, tc.agent.WorkspaceID, c.ID, []store.Message{msg}); err != nil {
			return nil, err
		}
	}
	return s.settleOutcome(tc, tx, &c, out, out.fired != nil)
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
