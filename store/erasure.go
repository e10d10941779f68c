package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// ErasedRows is how many rows of a table an erasure deleted, blanked or tombstoned.
type ErasedRows struct {
	Table string
	Rows  int
}

// ErasedContact is what EraseContact did.
type ErasedContact struct {
	Rows []ErasedRows
	// AlreadyErased says the contact had been erased before (this run found what was left,
	// usually nothing).
	AlreadyErased bool
}

// EraseContact removes the personal data of a contact of ws: its own fields and list
// memberships, its conversations' messages (blanked: the turns stay, counted), SMS bodies
// and numbers, notes and handoff summaries, its campaign sends' carrier details, the link
// of metering rows to its conversations, and the data of the events that mention it or its
// conversations (tombstoned, keeping their cursor). Run it on the Tx that records the
// erasure. ErrNotFound ("contact") when ws has no such contact.
func (q *queries) EraseContact(ctx context.Context, ws, contactID uuid.UUID) (ErasedContact, error) {
	c, err := q.sql.ContactForErasure(ctx, q.db, dbsqlc.ContactForErasureParams{WorkspaceID: ws, ID: contactID})
	if err != nil {
		return ErasedContact{}, notFound("contact", err)
	}
	convs, err := q.sql.ContactConversations(ctx, q.db, dbsqlc.ContactConversationsParams{WorkspaceID: ws, ContactID: &contactID})
	if err != nil {
		return ErasedContact{}, err
	}
	ids, shorts := make([]uuid.UUID, len(convs)), make([]string, len(convs))
	for i, cv := range convs {
		ids[i], shorts[i] = cv.ID, cv.ShortID
	}
	needles := append([]string{contactID.String()}, mentionNeedles(ids, shorts)...)
	out := ErasedContact{AlreadyErased: c.ErasedAt != nil}
	steps := []struct {
		table string
		run   func() (int64, error)
	}{
		{"contacts", func() (int64, error) {
			return q.sql.EraseContactFields(ctx, q.db, dbsqlc.EraseContactFieldsParams{WorkspaceID: ws, ID: contactID})
		}},
		{"contact_list_members", func() (int64, error) {
			return q.sql.EraseContactListMemberships(ctx, q.db, dbsqlc.EraseContactListMembershipsParams{WorkspaceID: ws, ContactID: contactID})
		}},
		{"messages", func() (int64, error) {
			return q.sql.BlankMessages(ctx, q.db, dbsqlc.BlankMessagesParams{WorkspaceID: ws, ConversationIds: ids})
		}},
		{"channel_messages", func() (int64, error) {
			return q.sql.BlankChannelMessages(ctx, q.db, dbsqlc.BlankChannelMessagesParams{WorkspaceID: ws, ConversationIds: ids})
		}},
		{"conversation_notes", func() (int64, error) {
			return q.sql.DeleteConversationNotes(ctx, q.db, dbsqlc.DeleteConversationNotesParams{WorkspaceID: ws, ConversationIds: ids})
		}},
		{"conversations", func() (int64, error) {
			return q.sql.BlankConversationSummaries(ctx, q.db, dbsqlc.BlankConversationSummariesParams{WorkspaceID: ws, ConversationIds: ids})
		}},
		{"campaign_sends", func() (int64, error) {
			return q.sql.BlankCampaignSends(ctx, q.db, dbsqlc.BlankCampaignSendsParams{WorkspaceID: ws, ContactID: contactID})
		}},
		{"ledger", func() (int64, error) {
			return q.sql.BlankLedgerConversations(ctx, q.db, dbsqlc.BlankLedgerConversationsParams{WorkspaceID: ws, ConversationIds: ids})
		}},
		{"events", func() (int64, error) { // last: it holds the workspace's row lock until COMMIT
			return q.tombstoneToCommit(ctx, ws, needles)
		}},
	}
	for _, s := range steps {
		n, err := s.run()
		if err != nil {
			return ErasedContact{}, err
		}
		out.Rows = append(out.Rows, ErasedRows{Table: s.table, Rows: int(n)})
	}
	return out, nil
}

// WorkspaceRetention is ws's retention period in days; nil keeps everything.
func (q *queries) WorkspaceRetention(ctx context.Context, ws uuid.UUID) (*int, error) {
	days, err := q.sql.WorkspaceRetention(ctx, q.db, ws)
	return days, notFound("workspace", err)
}

// SetWorkspaceRetention sets ws's retention period (nil: keep everything).
func (q *queries) SetWorkspaceRetention(ctx context.Context, ws uuid.UUID, days *int) (*int, error) {
	out, err := q.sql.SetWorkspaceRetention(ctx, q.db, dbsqlc.SetWorkspaceRetentionParams{ID: ws, RetentionDays: days})
	return out, notFound("workspace", err)
}

// RetentionScope is a workspace whose conversations can expire, and the retention job's
// place in it.
type RetentionScope struct {
	Workspace uuid.UUID
	Days      *int // the workspace's period; nil keeps the conversations of agents without their own
	Shortest  int  // the shortest period that applies in it, an agent's or the workspace's
	// before is where the next batch starts: the oldest activity of the previous batch's
	// conversations (zero before the first).
	before time.Time
}

// RetentionScopes are the workspaces whose conversations can expire, each with its place at
// the start: the retention job works through them one by one.
func (q *queries) RetentionScopes(ctx context.Context) ([]*RetentionScope, error) {
	rows, err := q.sql.RetentionWorkspaces(ctx, q.db)
	if err != nil {
		return nil, err
	}
	out := make([]*RetentionScope, len(rows))
	for i, r := range rows {
		out[i] = &RetentionScope{Workspace: r.ID, Days: r.RetentionDays, Shortest: r.ShortestDays}
	}
	return out, nil
}

// Expired is what one batch of the retention job deleted.
type Expired struct {
	Conversations int
	Events        int  // tombstoned
	More          bool // the batch was full: the scope may hold more
}

// endOfTime starts a scope's walk: every conversation was last active before it.
var endOfTime = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// ExpireConversations deletes a batch of at most limit of scope's conversations past their
// retention (with their messages, SMS, notes and responses) and tombstones the events that
// mention them, in one short transaction, and moves scope's place past them.
func (s *Store) ExpireConversations(ctx context.Context, scope *RetentionScope, limit int) (Expired, error) {
	before := scope.before
	if before.IsZero() {
		before = endOfTime
	}
	var out Expired
	var oldest time.Time
	err := s.InTx(ctx, func(tx *Tx) error {
		out = Expired{}
		rows, err := tx.sql.ExpiredConversations(ctx, tx.db, dbsqlc.ExpiredConversationsParams{
			WorkspaceID: scope.Workspace, ShortestDays: scope.Shortest, Before: before, WorkspaceDays: scope.Days, MaxRows: int32(limit)})
		if err != nil || len(rows) == 0 {
			return err
		}
		out.More = len(rows) == limit
		oldest = rows[len(rows)-1].UpdatedAt
		ids, shorts := make([]uuid.UUID, len(rows)), make([]string, len(rows))
		for i, c := range rows {
			ids[i], shorts[i] = c.ID, c.ShortID
		}
		needles := mentionNeedles(ids, shorts)
		from, err := tx.sql.WorkspaceEventSeq(ctx, tx.db, scope.Workspace)
		if err != nil {
			return err
		}
		n, err := tx.tombstone(ctx, scope.Workspace, needles)
		if err != nil {
			return err
		}
		if _, err := tx.sql.DeleteChannelMessagesOf(ctx, tx.db, dbsqlc.DeleteChannelMessagesOfParams{WorkspaceID: scope.Workspace, ConversationIds: ids}); err != nil {
			return err
		}
		deleted, err := tx.sql.DeleteConversations(ctx, tx.db, dbsqlc.DeleteConversationsParams{WorkspaceID: scope.Workspace, ConversationIds: ids})
		if err != nil {
			return err
		}
		// Last, after the deletes: it holds the workspace's row lock until COMMIT.
		late, err := tx.tombstoneLate(ctx, scope.Workspace, needles, from)
		out.Conversations, out.Events = int(deleted), int(n+late)
		return err
	})
	if err == nil && out.More {
		// At or before, not before: conversations last active at the same instant as the
		// batch's oldest may not have fit in it (those it deleted are gone).
		scope.before = oldest
	}
	return out, err
}

// DeleteExpiredUploads deletes a batch of at most limit uploads past their workspace's
// retention that no knowledge source reads; it returns how many.
func (q *queries) DeleteExpiredUploads(ctx context.Context, limit int) (int, error) {
	n, err := q.sql.DeleteExpiredUploads(ctx, q.db, int32(limit))
	return int(n), err
}

// likeEscape escapes LIKE's wildcards in s (short ids hold `_`).
func likeEscape(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == '_' || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}
