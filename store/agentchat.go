package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"switchboard/shortid"
	"switchboard/store/internal/dbsqlc"
)

// Contact is the person on the other side of an agent's conversation, as far as known.
type Contact struct {
	Name, Email, Phone *string
}

// Empty reports whether nothing is known of the contact.
func (c Contact) Empty() bool { return c.Name == nil && c.Email == nil && c.Phone == nil }

// Reachable reports whether the contact can be called back: an email or a phone number.
func (c Contact) Reachable() bool { return c.Email != nil || c.Phone != nil }

// AgentConversation is a conversation of a deployed agent with the runtime's state of it.
type AgentConversation struct {
	Conversation
	AgentID           *uuid.UUID
	Status            string // open, escalated or closed
	Labels            []string
	ContactID         *uuid.UUID
	Contact           Contact
	DisclosedAt       *time.Time
	EscalationTrigger *string
	EscalationAction  *string
	EscalatedAt       *time.Time
	FailedAttempts    int
	AwaitingContact   bool
	PickupTimedOutAt  *time.Time
	// AssigneeUserID is the person holding the conversation (the team inbox); nil: nobody.
	AssigneeUserID *uuid.UUID
}

// AgentConversationState loads a conversation with its agent, contact and escalation state.
func (q *queries) AgentConversationState(ctx context.Context, workspaceID, id uuid.UUID) (AgentConversation, error) {
	r, err := q.sql.AgentConversationState(ctx, q.db, dbsqlc.AgentConversationStateParams{WorkspaceID: workspaceID, ID: id})
	if err != nil {
		return AgentConversation{}, notFound("conversation", err)
	}
	return AgentConversation{
		Conversation: Conversation{ID: r.ID, ShortID: r.ShortID, Channel: r.Channel, CreatedAt: r.CreatedAt},
		AgentID:      r.AgentID, Status: r.Status, Labels: r.Labels, ContactID: r.ContactID,
		Contact:     Contact{Name: r.ContactName, Email: r.ContactEmail, Phone: r.ContactPhone},
		DisclosedAt: r.DisclosedAt, EscalationTrigger: r.EscalationTrigger, EscalationAction: r.EscalationAction,
		EscalatedAt: r.EscalatedAt, FailedAttempts: r.FailedAttempts, AwaitingContact: r.AwaitingContact,
		PickupTimedOutAt: r.PickupTimedOutAt, AssigneeUserID: r.AssigneeUserID,
	}, nil
}

// AgentTurn is what a turn of a deployed agent reads of its conversation (AgentTurnState).
type AgentTurn struct {
	Conversation AgentConversation
	// AgentVersion is the version of the conversation's agent row as the statement read it
	// (its xmin: every change of the row changes it); 0 when the agent is gone.
	AgentVersion int64
	// History is the turn's history window, as HistoryWindow reads it, less what the
	// caller held already (TurnRead.KnownFrom to KnownTo: Elided).
	History []WindowMessage
	// Search is the plan of a knowledge search for the agent (SearchKnowledgeWith), when the
	// read was given a search query; nil otherwise.
	Search *SearchPlan
}

// WindowMessage is a message of a turn's history window (AgentTurnState): its seq and the
// version of its row (the row's xmin: every change of the row, an erasure's blanking,
// changes it), and, unless Elided, what it says.
type WindowMessage struct {
	Message
	Seq     int
	Version int64
	// Elided: the read was told the caller holds this seq already (TurnRead), and left its
	// content, tool calls and tool results out.
	Elided bool
}

// TurnRead is what AgentTurnState reads: the conversation Ref (its `mc-` short id or its
// UUID, as ConversationByRef takes it), its newest messages as HistoryWindow(MaxMessages,
// MaxBytes) returns them, and with a Search query that is not empty the plan of that search
// of the conversation's agent's knowledge (AgentTurn.Search), as SearchKnowledge would make
// it before it looks. The messages whose seq is from KnownFrom to KnownTo, which the caller
// holds already, come Elided (KnownTo 0: none).
type TurnRead struct {
	Ref                string
	MaxMessages        int
	MaxBytes           int64
	Search             string
	KnownFrom, KnownTo int
}

// AgentTurnState reads, in one statement, a conversation of the workspace with its state
// (AgentConversationState), the version of its agent's row, and its history window (TurnRead).
func (q *queries) AgentTurnState(ctx context.Context, workspaceID uuid.UUID, read TurnRead) (AgentTurn, error) {
	p := dbsqlc.AgentTurnStateParams{WorkspaceID: workspaceID, MaxMessages: read.MaxMessages, MaxBytes: read.MaxBytes,
		SearchQuery: read.Search, KnownFrom: max(read.KnownFrom, 1), KnownTo: read.KnownTo}
	if id, err := uuid.Parse(read.Ref); err == nil {
		p.ID = id // no short id is empty
	} else {
		p.ShortID = read.Ref // uuid.Nil is no conversation's id
	}
	rows, err := q.sql.AgentTurnState(ctx, q.db, p)
	if err != nil {
		return AgentTurn{}, err
	}
	if len(rows) == 0 {
		return AgentTurn{}, &NotFoundError{What: "conversation"}
	}
	r := rows[0]
	out := AgentTurn{AgentVersion: r.AgentVersion, Conversation: AgentConversation{
		Conversation: Conversation{ID: r.ID, ShortID: r.ShortID, Channel: r.Channel, CreatedAt: r.CreatedAt},
		AgentID:      r.AgentID, Status: r.Status, Labels: r.Labels, ContactID: r.ContactID,
		Contact:     Contact{Name: r.ContactName, Email: r.ContactEmail, Phone: r.ContactPhone},
		DisclosedAt: r.DisclosedAt, EscalationTrigger: r.EscalationTrigger, EscalationAction: r.EscalationAction,
		EscalatedAt: r.EscalatedAt, FailedAttempts: r.FailedAttempts, AwaitingContact: r.AwaitingContact,
		PickupTimedOutAt: r.PickupTimedOutAt, AssigneeUserID: r.AssigneeUserID,
	}}
	if read.Search != "" {
		out.Search = &SearchPlan{Sources: r.SearchSources, Lexemes: r.SearchLexemes, Base: r.SearchBase, Generation: r.SearchGeneration}
	}
	out.History = make([]WindowMessage, 0, len(rows))
	for _, r := range rows {
		if r.Seq == 0 {
			continue // the empty window's row
		}
		out.History = append(out.History, WindowMessage{Seq: r.Seq, Version: r.Version, Elided: r.Elided,
			Message: Message{Role: r.Role, Content: r.Content, ToolCalls: r.ToolCalls, ToolResults: r.ToolResults}})
	}
	return out, nil
}

// CreateContact stores a contact of the workspace.
func (q *queries) CreateContact(ctx context.Context, workspaceID uuid.UUID, c Contact) (uuid.UUID, error) {
	return q.sql.CreateContact(ctx, q.db, dbsqlc.CreateContactParams{WorkspaceID: workspaceID, Name: c.Name, Email: c.Email, Phone: c.Phone})
}

// MergeContact fills in the fields of c that are set, keeping the others.
func (q *queries) MergeContact(ctx context.Context, workspaceID, id uuid.UUID, c Contact) error {
	return q.sql.MergeContact(ctx, q.db, dbsqlc.MergeContactParams{WorkspaceID: workspaceID, ID: id, Name: c.Name, Email: c.Email, Phone: c.Phone})
}

// OpenAgentConversation ties a new conversation to its agent, its contact (optional) and
// the time the AI disclosure was given (nil when it was not).
func (q *queries) OpenAgentConversation(ctx context.Context, workspaceID, id, agentID uuid.UUID, contactID *uuid.UUID, disclosedAt *time.Time) error {
	return q.sql.OpenAgentConversation(ctx, q.db, dbsqlc.OpenAgentConversationParams{WorkspaceID: workspaceID, ID: id,
		AgentID: &agentID, ContactID: contactID, DisclosedAt: disclosedAt})
}

// OpenAgentConversationWith opens a conversation of an agent on channel in one statement:
// tied to the agent, its contact (optional) and the time the AI disclosure was given (nil
// when it was not), with msgs as its first messages (what CreateConversation,
// OpenAgentConversation and AppendMessages do). Messages hold text only.
func (q *queries) OpenAgentConversationWith(ctx context.Context, workspaceID uuid.UUID, channel string, agentID uuid.UUID, contactID *uuid.UUID, disclosedAt *time.Time, msgs []Message) (Conversation, error) {
	c := Conversation{ID: newRowID(), ShortID: shortid.New(shortid.Conversation), Channel: channel}
	roles, contents := make([]string, 0, len(msgs)), make([]string, 0, len(msgs))
	for _, m := range msgs {
		roles, contents = append(roles, m.Role), append(contents, m.Content)
	}
	createdAt, err := q.sql.OpenAgentConversationWith(ctx, q.db, dbsqlc.OpenAgentConversationWithParams{ID: c.ID, WorkspaceID: workspaceID,
		ShortID: c.ShortID, Channel: channel, AgentID: &agentID, ContactID: contactID, DisclosedAt: disclosedAt, Roles: roles, Contents: contents})
	c.CreatedAt = createdAt
	return c, err
}

// SetConversationContact points a conversation at its contact.
func (q *queries) SetConversationContact(ctx context.Context, workspaceID, id, contactID uuid.UUID) error {
	return q.sql.SetConversationContact(ctx, q.db, dbsqlc.SetConversationContactParams{WorkspaceID: workspaceID, ID: id, ContactID: &contactID})
}

// AddConversationLabel adds a label to a conversation (once) and returns its labels.
func (q *queries) AddConversationLabel(ctx context.Context, workspaceID, id uuid.UUID, label string) ([]string, error) {
	labels, err := q.sql.AddConversationLabel(ctx, q.db, dbsqlc.AddConversationLabelParams{WorkspaceID: workspaceID, ID: id, Label: label})
	return labels, notFound("conversation", err)
}

// ConversationFlow is the part of a conversation's state that a turn of its agent changes.
type ConversationFlow struct {
	Status            string
	EscalationTrigger *string
	EscalationAction  *string
	EscalatedAt       *time.Time
	FailedAttempts    int
	AwaitingContact   bool
	PickupTimedOutAt  *time.Time
}

// SetConversationFlow writes a conversation's status and escalation state.
func (q *queries) SetConversationFlow(ctx context.Context, workspaceID, id uuid.UUID, f ConversationFlow) error {
	return q.sql.SetConversationFlow(ctx, q.db, dbsqlc.SetConversationFlowParams{WorkspaceID: workspaceID, ID: id, Status: f.Status,
		EscalationTrigger: f.EscalationTrigger, EscalationAction: f.EscalationAction, EscalatedAt: f.EscalatedAt,
		FailedAttempts: f.FailedAttempts, AwaitingContact: f.AwaitingContact, PickupTimedOutAt: f.PickupTimedOutAt})
}

// TranscriptLine is a message of a conversation as a person reads it: user and assistant
// text, without tool traffic.
type TranscriptLine struct {
	Role      string
	Content   string
	CreatedAt time.Time
}

// Transcript returns the readable messages of a conversation, in order.
func (q *queries) Transcript(ctx context.Context, workspaceID, conversationID uuid.UUID) ([]TranscriptLine, error) {
	rows, err := q.sql.ConversationMessages(ctx, q.db, dbsqlc.ConversationMessagesParams{WorkspaceID: workspaceID, ConversationID: conversationID})
	return mapRows(rows, func(r dbsqlc.ConversationMessagesRow) TranscriptLine {
		return TranscriptLine{Role: r.Role, Content: r.Content, CreatedAt: r.CreatedAt}
	}), err
}
