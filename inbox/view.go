package inbox

import (
	"time"

	"github.com/google/uuid"

	"switchboard/store"
)

// Summary is a conversation as the inbox lists it (schema InboxConversation).
type Summary struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Channel string   `json:"channel"`
	Status  string   `json:"status"`
	Agent   *Agent   `json:"agent"`
	Contact *Contact `json:"contact"`
	// Assignee is the person holding the conversation; nil: nobody.
	Assignee *Person  `json:"assignee"`
	Labels   []string `json:"labels"`
	// Waiting: escalated and nobody holds it.
	Waiting           bool       `json:"waiting"`
	EscalatedAt       *time.Time `json:"escalated_at"`
	EscalationTrigger *string    `json:"escalation_trigger"`
	LastMessage       string     `json:"last_message"`
	CreatedAt         time.Time  `json:"created_at"`
	// LastActivityAt is when a message was last added or the conversation last changed.
	LastActivityAt time.Time `json:"last_activity_at"`
}

// Agent names the conversation's agent.
type Agent struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
}

// Contact is the person on the other side, as far as known.
type Contact struct {
	ID    uuid.UUID `json:"id"`
	Name  *string   `json:"name"`
	Email *string   `json:"email"`
	Phone *string   `json:"phone"`
}

// Person is a person of the workspace (or the workspace itself, for a key: id null).
type Person struct {
	ID    *uuid.UUID `json:"id"`
	Name  string     `json:"name"`
	Email *string    `json:"email,omitempty"`
}

// Detail is one conversation with everything a person taking it over needs (schema
// InboxConversationDetail).
type Detail struct {
	Summary
	Escalation *Escalation `json:"escalation"`
	Messages   []Message   `json:"messages"`
	Notes      []Note      `json:"notes"`
}

// Escalation is why and when the conversation was handed over, with the handoff summary.
type Escalation struct {
	Trigger          *string    `json:"trigger"`
	Action           *string    `json:"action"`
	Summary          *string    `json:"summary"`
	EscalatedAt      *time.Time `json:"escalated_at"`
	PickupTimedOutAt *time.Time `json:"pickup_timed_out_at"`
}

// Message roles as the inbox shows them.
const (
	RoleVisitor = "user"
	RoleAgent   = "assistant"
	RoleHuman   = "human"  // a person of the workspace replied
	RoleNotice  = "notice" // a line about the conversation
)

// Message is a readable message of the transcript.
type Message struct {
	Seq       int       `json:"seq"`
	Role      string    `json:"role"`
	Text      string    `json:"text"`
	Author    *Person   `json:"author"`
	CreatedAt time.Time `json:"created_at"`
}

// Note is an internal note.
type Note struct {
	ID        uuid.UUID `json:"id"`
	Object    string    `json:"object"`
	Text      string    `json:"text"`
	Author    Person    `json:"author"`
	CreatedAt time.Time `json:"created_at"`
}

func summaryOf(r store.InboxItem) Summary {
	return Summary{ID: r.ShortID, Object: "conversation", Channel: r.Channel, Status: r.Status,
		Agent: agentOf(r.AgentID, r.AgentName), Contact: contactOf(r.ContactID, r.ContactName, r.ContactEmail, r.ContactPhone),
		Assignee: assigneeOf(r.AssigneeUserID, r.AssigneeDisplayName, r.AssigneeEmail), Labels: nonNil(r.Labels),
		Waiting: r.Status == "escalated" && r.AssigneeUserID == nil, EscalatedAt: r.EscalatedAt,
		EscalationTrigger: r.EscalationTrigger, LastMessage: preview(r.LastMessage), CreatedAt: r.CreatedAt,
		LastActivityAt: r.UpdatedAt}
}

func detailOf(c store.InboxConversation, msgs []store.TranscriptMessage, notes []store.Note) Detail {
	d := Detail{Summary: Summary{ID: c.ShortID, Object: "conversation", Channel: c.Channel, Status: c.Status,
		Agent: agentOf(c.AgentID, c.AgentName), Contact: contactOf(c.ContactID, c.ContactName, c.ContactEmail, c.ContactPhone),
		Assignee: assigneeOf(c.AssigneeUserID, c.AssigneeDisplayName, c.AssigneeEmail), Labels: nonNil(c.Labels),
		Waiting: c.Status == "escalated" && c.AssigneeUserID == nil, EscalatedAt: c.EscalatedAt,
		EscalationTrigger: c.EscalationTrigger, CreatedAt: c.CreatedAt, LastActivityAt: c.UpdatedAt},
		Messages: make([]Message, 0, len(msgs)), Notes: make([]Note, 0, len(notes))}
	if c.EscalationTrigger != nil || c.EscalatedAt != nil {
		d.Escalation = &Escalation{Trigger: c.EscalationTrigger, Action: c.EscalationAction, Summary: c.EscalationSummary,
			EscalatedAt: c.EscalatedAt, PickupTimedOutAt: c.PickupTimedOutAt}
	}
	for _, m := range msgs {
		d.Messages = append(d.Messages, messageOf(m))
	}
	if n := len(d.Messages); n > 0 {
		d.LastMessage = preview(d.Messages[n-1].Text)
	}
	for _, n := range notes {
		d.Notes = append(d.Notes, noteOf(n))
	}
	return d
}

func messageOf(m store.TranscriptMessage) Message {
	out := Message{Seq: m.Seq, Role: m.Role, Text: m.Content, CreatedAt: m.CreatedAt}
	if m.AuthorName != nil {
		out.Role = RoleHuman
		if m.Notice {
			out.Role = RoleNotice
		}
		out.Author = &Person{ID: m.AuthorUserID, Name: *m.AuthorName}
	}
	return out
}

func noteOf(n store.Note) Note {
	return Note{ID: n.ID, Object: "conversation.note", Text: n.Body, Author: Person{ID: n.AuthorUserID, Name: n.AuthorName},
		CreatedAt: n.CreatedAt}
}

func agentOf(id *uuid.UUID, name string) *Agent {
	if id == nil {
		return nil
	}
	return &Agent{ID: *id, Name: name}
}

func contactOf(id *uuid.UUID, name, email, phone *string) *Contact {
	if id == nil {
		return nil
	}
	return &Contact{ID: *id, Name: name, Email: email, Phone: phone}
}

func assigneeOf(id *uuid.UUID, displayName, email *string) *Person {
	if id == nil {
		return nil
	}
	e := ""
	if email != nil {
		e = *email
	}
	return &Person{ID: id, Name: DisplayName(displayName, e), Email: email}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// preview cuts a message for the list, in characters.
func preview(s string) string {
	r := []rune(s)
	if len(r) <= 200 {
		return s
	}
	return string(r[:199]) + "…"
}
