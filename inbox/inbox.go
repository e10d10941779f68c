// Package inbox is the team inbox: people of a workspace take over conversations their agents
// escalated (or any open one), reply in them on the conversation's own channel, write internal
// notes, and hand them back to the agent or close them.
//
// While a person holds a conversation, its agent does not answer (converse, rule 2): the
// visitor's messages wait in the inbox. A person's reply is stored as an assistant message
// with its author, so that the agent, once the conversation is released, reads the whole
// transcript, the person's replies included; it is delivered on the conversation's channel by
// that channel's Deliverer, and announced as turn.completed with surface "human" (the
// contract's closed list of event types has no other). Lines about the conversation ("Ann
// joined the conversation") are notices: the visitor and the transcript show them, the model
// does not see them. Notes are for the team only: never delivered, never in the model's
// history.
//
// A session acts as its person; a key acts as the workspace (its replies are signed with
// the workspace's name, and it names the person it assigns).
package inbox

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"switchboard/apierr"
	"switchboard/store"
)

// Service is the team inbox.
type Service struct {
	store      *store.Store
	deliverers map[string]Deliverer
	jobs       *river.Client[pgx.Tx]
	publicURL  string
	now        func() time.Time
	log        *slog.Logger
}

// New returns the inbox. deliverers maps a conversation's channel to what sends a person's
// reply on it (see Deliverer); jobs inserts the unclaimed-conversation emails, which link
// to publicURL's dashboard; now is the clock (time.Now when nil).
func New(st *store.Store, deliverers map[string]Deliverer, jobs *river.Client[pgx.Tx], publicURL string, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: st, deliverers: deliverers, jobs: jobs, publicURL: strings.TrimSuffix(publicURL, "/"), now: now, log: log}
}

// Actor is who acts in the inbox: a person (a dashboard session) or the workspace (a key,
// UserID uuid.Nil).
type Actor struct {
	UserID uuid.UUID
	Name   string
}

// Person reports whether a person acts (not a key).
func (a Actor) Person() bool { return a.UserID != uuid.Nil }

func (a Actor) userRef() *uuid.UUID {
	if !a.Person() {
		return nil
	}
	id := a.UserID
	return &id
}

// DisplayName is a person's name as visitors see it: their display name, or the part of
// their email address before the @, capitalized.
func DisplayName(displayName *string, email string) string {
	if displayName != nil && strings.TrimSpace(*displayName) != "" {
		return strings.TrimSpace(*displayName)
	}
	local, _, _ := strings.Cut(email, "@")
	local = strings.NewReplacer(".", " ", "_", " ", "-", " ").Replace(local)
	words := strings.Fields(local)
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	if len(words) == 0 {
		return "Team"
	}
	return strings.Join(words, " ")
}

// ActorOf is the actor of a request: the session's person (userID) or the workspace.
func (s *Service) ActorOf(ctx context.Context, workspaceID, userID uuid.UUID, workspaceName string) (Actor, error) {
	if userID == uuid.Nil {
		return Actor{Name: workspaceName}, nil
	}
	u, err := s.store.InboxUser(ctx, workspaceID, userID)
	if err != nil {
		return Actor{}, err
	}
	return Actor{UserID: u.ID, Name: DisplayName(u.DisplayName, u.Email)}, nil
}

// Filter is what GET /api/conversations asks for.
type Filter struct {
	Status  string
	Channel string
	AgentID *uuid.UUID
	// Assignee: "" any, "none" nobody, "me" the acting person, or a user id.
	Assignee string
	Limit    int
	After    string // next_after of the previous page
}

// Page is a page of the inbox.
type Page struct {
	Object    string    `json:"object"`
	Data      []Summary `json:"data"`
	HasMore   bool      `json:"has_more"`
	NextAfter *string   `json:"next_after"`
}

// List lists the workspace's agent conversations by newest activity.
func (s *Service) List(ctx context.Context, workspaceID uuid.UUID, actor Actor, f Filter) (Page, error) {
	sf := store.InboxFilter{Status: f.Status, Channel: f.Channel, AgentID: f.AgentID, Limit: f.Limit + 1}
	switch f.Assignee {
	case "":
	case "none":
		sf.Unassigned = true
	case "me":
		if !actor.Person() {
			return Page{}, apierr.Invalid("assignee", "session_required", "assignee=me needs a signed-in person; a key acts as the workspace. Pass a user id instead.")
		}
		sf.Assignee = actor.userRef()
	default:
		id, err := uuid.Parse(f.Assignee)
		if err != nil {
			return Page{}, apierr.Invalid("assignee", "invalid_value", "assignee must be a user id, me or none.")
		}
		sf.Assignee = &id
	}
	if f.After != "" {
		at, id, err := decodeCursor(f.After)
		if err != nil {
			return Page{}, apierr.Invalid("after", "invalid_value", "after must be the next_after of a previous page.")
		}
		sf.AfterAt, sf.AfterID = &at, &id
	}
	rows, err := s.store.InboxConversations(ctx, workspaceID, sf)
	if err != nil {
		return Page{}, err
	}
	page := Page{Object: "list", Data: make([]Summary, 0, len(rows))}
	if len(rows) > f.Limit {
		rows = rows[:f.Limit]
		last := rows[len(rows)-1]
		c := encodeCursor(last.UpdatedAt, last.ID)
		page.HasMore, page.NextAfter = true, &c
	}
	for _, r := range rows {
		page.Data = append(page.Data, summaryOf(r))
	}
	return page, nil
}

// Cursors are the last row's activity time and id, opaque to clients.
func encodeCursor(at time.Time, id uuid.UUID) string {
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%d:%s", at.UnixMicro(), id)))
}

func decodeCursor(c string) (time.Time, uuid.UUID, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, uuid.Nil, err
	}
	micros, idText, ok := strings.Cut(string(raw), ":")
	if !ok {
		return time.Time{}, uuid.Nil, fmt.Errorf("cursor %q", c)
	}
	var us int64
	if _, err := fmt.Sscan(micros, &us); err != nil {
		return time.Time{}, uuid.Nil, err
	}
	id, err := uuid.Parse(idText)
	return time.UnixMicro(us), id, err
}

// Waiting counts the escalated conversations nobody holds (the dashboard's navigation).
func (s *Service) Waiting(ctx context.Context, workspaceID uuid.UUID) (int64, error) {
	return s.store.WaitingConversations(ctx, workspaceID)
}

// Get is one conversation with its transcript, notes and escalation.
func (s *Service) Get(ctx context.Context, workspaceID uuid.UUID, ref string) (Detail, error) {
	conv, err := s.conversation(ctx, workspaceID, ref)
	if err != nil {
		return Detail{}, err
	}
	return s.detail(ctx, workspaceID, conv.ID)
}

func (s *Service) detail(ctx context.Context, workspaceID, id uuid.UUID) (Detail, error) {
	c, err := s.store.InboxConversation(ctx, workspaceID, id)
	if err != nil {
		return Detail{}, err
	}
	msgs, err := s.store.ConversationTranscript(ctx, workspaceID, id)
	if err != nil {
		return Detail{}, err
	}
	notes, err := s.store.ConversationNotes(ctx, workspaceID, id)
	if err != nil {
		return Detail{}, err
	}
	return detailOf(c, msgs, notes), nil
}

// conversation finds a conversation of the workspace by its mc- id or UUID; another
// workspace's is not found.
func (s *Service) conversation(ctx context.Context, workspaceID uuid.UUID, ref string) (store.Conversation, error) {
	c, err := s.store.ConversationByRef(ctx, workspaceID, ref)
	if err != nil {
		return c, apierr.WithParam(err, "id")
	}
	return c, nil
}
