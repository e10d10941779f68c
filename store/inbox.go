package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/store/internal/dbsqlc"
)

// InboxFilter selects conversations of the team inbox. Empty fields match all.
type InboxFilter struct {
	Status  string
	Channel string
	AgentID *uuid.UUID
	// Unassigned lists the conversations nobody holds; Assignee those one person holds.
	Unassigned bool
	Assignee   *uuid.UUID
	// After is the cursor of the previous page: its last conversation's activity and id.
	AfterAt *time.Time
	AfterID *uuid.UUID
	Limit   int
}

// InboxItem is a conversation as the inbox lists it.
type InboxItem = dbsqlc.InboxConversationsRow

// InboxConversation is a conversation with what a person taking it over needs.
type InboxConversation = dbsqlc.InboxConversationRow

// TranscriptMessage is a readable message with its author (nil: the visitor or the agent).
type TranscriptMessage = dbsqlc.ConversationTranscriptRow

// AuthoredMessage is a person's reply or a notice, as the visitor's stream sends it.
type AuthoredMessage = dbsqlc.AuthoredMessagesAfterRow

// Note is an internal note on a conversation.
type Note = dbsqlc.ConversationNotesRow

// UnclaimedConversation is an escalated conversation that waited too long for a person.
type UnclaimedConversation = dbsqlc.ClaimUnclaimedNoticesRow

// InboxUser is a person as the inbox knows them.
type InboxUser = dbsqlc.InboxUserRow

// InboxConversations lists conversations by newest activity.
func (q *queries) InboxConversations(ctx context.Context, workspaceID uuid.UUID, f InboxFilter) ([]InboxItem, error) {
	mode := ""
	switch {
	case f.Unassigned:
		mode = "none"
	case f.Assignee != nil:
		mode = "user"
	}
	return q.sql.InboxConversations(ctx, q.db, dbsqlc.InboxConversationsParams{WorkspaceID: workspaceID, Status: f.Status,
		AssigneeMode: mode, Assignee: f.Assignee, Channel: f.Channel, AgentID: f.AgentID, AfterAt: f.AfterAt, AfterID: f.AfterID,
		MaxRows: int32(f.Limit)})
}

// InboxConversation reads one conversation for the inbox.
func (q *queries) InboxConversation(ctx context.Context, workspaceID, id uuid.UUID) (InboxConversation, error) {
	c, err := q.sql.InboxConversation(ctx, q.db, dbsqlc.InboxConversationParams{WorkspaceID: workspaceID, ID: id})
	return c, notFound("conversation", err)
}

// ConversationHold is a conversation's state as the inbox changes it.
type ConversationHold = dbsqlc.LockConversationHoldRow

// LockConversationHold reads a conversation's status, channel and the person holding it,
// locking the row until the transaction ends. The /v1 API's own conversations are not the
// inbox's: not found.
func (t *Tx) LockConversationHold(ctx context.Context, workspaceID, id uuid.UUID) (ConversationHold, error) {
	r, err := t.sql.LockConversationHold(ctx, t.db, dbsqlc.LockConversationHoldParams{WorkspaceID: workspaceID, ID: id})
	return r, notFound("conversation", err)
}

// AssignConversation hands a conversation to a person, or back to the queue (nil).
func (t *Tx) AssignConversation(ctx context.Context, workspaceID, id uuid.UUID, assignee *uuid.UUID) error {
	return t.sql.AssignConversation(ctx, t.db, dbsqlc.AssignConversationParams{WorkspaceID: workspaceID, ID: id, Assignee: assignee})
}

// ReleaseConversation hands a conversation back to its agent.
func (t *Tx) ReleaseConversation(ctx context.Context, workspaceID, id uuid.UUID) error {
	return t.sql.ReleaseConversation(ctx, t.db, dbsqlc.ReleaseConversationParams{WorkspaceID: workspaceID, ID: id})
}

// CloseConversation closes a conversation: nobody answers in it any more.
func (t *Tx) CloseConversation(ctx context.Context, workspaceID, id uuid.UUID) error {
	return t.sql.CloseConversation(ctx, t.db, dbsqlc.CloseConversationParams{WorkspaceID: workspaceID, ID: id})
}

// SetEscalationSummary keeps the handoff summary of an escalation on its conversation.
func (t *Tx) SetEscalationSummary(ctx context.Context, workspaceID, id uuid.UUID, summary string) error {
	return t.sql.SetEscalationSummary(ctx, t.db, dbsqlc.SetEscalationSummaryParams{WorkspaceID: workspaceID, ID: id, Summary: &summary})
}

// NewAuthoredMessage is a message a person writes into a conversation.
type NewAuthoredMessage struct {
	Content    string
	AuthorID   *uuid.UUID // nil when a key (the workspace) wrote it
	AuthorName string
	Notice     bool // a line about the conversation ("Ann joined the conversation")
}

// AppendAuthored appends a person's reply or a notice and returns its seq and time.
func (t *Tx) AppendAuthored(ctx context.Context, workspaceID, conversationID uuid.UUID, m NewAuthoredMessage) (int, time.Time, error) {
	r, err := t.sql.InsertAuthoredMessage(ctx, t.db, dbsqlc.InsertAuthoredMessageParams{WorkspaceID: workspaceID,
		ConversationID: conversationID, Content: m.Content, AuthorUserID: m.AuthorID, AuthorName: &m.AuthorName, Notice: m.Notice})
	return r.Seq, r.CreatedAt, notFound("conversation", err)
}

// ConversationTranscript returns a conversation's readable messages with their authors.
func (q *queries) ConversationTranscript(ctx context.Context, workspaceID, conversationID uuid.UUID) ([]TranscriptMessage, error) {
	return q.sql.ConversationTranscript(ctx, q.db, dbsqlc.ConversationTranscriptParams{WorkspaceID: workspaceID, ConversationID: conversationID})
}

// AuthoredMessagesAfter returns people's replies and notices after seq (at most 100).
func (q *queries) AuthoredMessagesAfter(ctx context.Context, workspaceID, conversationID uuid.UUID, after int) ([]AuthoredMessage, error) {
	return q.sql.AuthoredMessagesAfter(ctx, q.db, dbsqlc.AuthoredMessagesAfterParams{WorkspaceID: workspaceID,
		ConversationID: conversationID, After: after})
}

// LastMessageSeq is the seq of a conversation's last message (0: none).
func (q *queries) LastMessageSeq(ctx context.Context, workspaceID, id uuid.UUID) (int, error) {
	n, err := q.sql.LastMessageSeq(ctx, q.db, dbsqlc.LastMessageSeqParams{WorkspaceID: workspaceID, ID: id})
	return n, notFound("conversation", err)
}

// AddNote stores an internal note.
func (t *Tx) AddNote(ctx context.Context, workspaceID, conversationID uuid.UUID, authorID *uuid.UUID, authorName, body string) (Note, error) {
	r, err := t.sql.InsertNote(ctx, t.db, dbsqlc.InsertNoteParams{WorkspaceID: workspaceID, ConversationID: conversationID,
		AuthorUserID: authorID, AuthorName: authorName, Body: body})
	return Note{ID: r.ID, AuthorUserID: authorID, AuthorName: authorName, Body: body, CreatedAt: r.CreatedAt}, err
}

// ConversationNotes lists a conversation's notes, oldest first.
func (q *queries) ConversationNotes(ctx context.Context, workspaceID, conversationID uuid.UUID) ([]Note, error) {
	return q.sql.ConversationNotes(ctx, q.db, dbsqlc.ConversationNotesParams{WorkspaceID: workspaceID, ConversationID: conversationID})
}

// WaitingConversations counts the escalated conversations nobody holds.
func (q *queries) WaitingConversations(ctx context.Context, workspaceID uuid.UUID) (int64, error) {
	return q.sql.WaitingConversations(ctx, q.db, workspaceID)
}

// ClaimUnclaimedNotices marks, once each, the escalated conversations that waited unclaimed
// longer than their workspace's setting at now, and returns them.
func (t *Tx) ClaimUnclaimedNotices(ctx context.Context, now time.Time) ([]UnclaimedConversation, error) {
	return t.sql.ClaimUnclaimedNotices(ctx, t.db, now)
}

// UnclaimedSubscribers are the email addresses of the people of a workspace who opted in to
// the unclaimed-conversation emails.
func (q *queries) UnclaimedSubscribers(ctx context.Context, workspaceID uuid.UUID) ([]string, error) {
	return q.sql.UnclaimedSubscribers(ctx, q.db, workspaceID)
}

// InboxNotifyAfter is how long an escalated conversation of the workspace may wait unclaimed.
func (q *queries) InboxNotifyAfter(ctx context.Context, workspaceID uuid.UUID) (time.Duration, error) {
	s, err := q.sql.InboxSettings(ctx, q.db, workspaceID)
	return time.Duration(s) * time.Second, notFound("workspace", err)
}

// SetInboxNotifyAfter changes it (30 seconds to a day).
func (q *queries) SetInboxNotifyAfter(ctx context.Context, workspaceID uuid.UUID, d time.Duration) error {
	return q.sql.SetInboxNotifyAfter(ctx, q.db, dbsqlc.SetInboxNotifyAfterParams{WorkspaceID: workspaceID, Seconds: int(d / time.Second)})
}

// InboxUser reads a person of the workspace.
func (q *queries) InboxUser(ctx context.Context, workspaceID, id uuid.UUID) (InboxUser, error) {
	u, err := q.sql.InboxUser(ctx, q.db, dbsqlc.InboxUserParams{WorkspaceID: workspaceID, ID: id})
	return u, notFound("user", err)
}

// SetUserInboxPrefs changes a person's display name and opt-in (nil: unchanged).
func (q *queries) SetUserInboxPrefs(ctx context.Context, workspaceID, id uuid.UUID, displayName *string, notify *bool) (InboxUser, error) {
	r, err := q.sql.SetUserInboxPrefs(ctx, q.db, dbsqlc.SetUserInboxPrefsParams{WorkspaceID: workspaceID, ID: id,
		DisplayName: displayName, NotifyUnclaimed: notify})
	if errors.Is(err, pgx.ErrNoRows) {
		return InboxUser{}, notFound("user", err)
	}
	return InboxUser(r), err
}

// ConversationToken names a conversation in announcements on IdempotencyChannel, which
// wakes the visitor's stream of that conversation (events.Hub.WaitConversation) when a
// person writes into it. The NUL byte keeps it apart from every Idempotency-Key (a header
// value cannot hold one).
func ConversationToken(workspaceID, conversationID uuid.UUID) string {
	return IdempotencyToken(workspaceID, "\x00conversation:"+conversationID.String())
}

// AnnounceConversation wakes the conversation's visitor streams after the commit.
func (t *Tx) AnnounceConversation(workspaceID, conversationID uuid.UUID) {
	t.keyNotices = append(t.keyNotices, ConversationToken(workspaceID, conversationID))
}
