package store

import (
	"context"

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
	ids := make([]uuid.UUID, len(convs))
	patterns := []string{"%" + contactID.String() + "%"}
	for i, cv := range convs {
		ids[i] = cv.ID
		patterns = append(patterns, "%"+cv.ID.String()+"%", "%"+likeEscape(cv.ShortID)+"%")
	}
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
		{"events", func() (int64, error) {
			return q.sql.TombstoneEvents(ctx, q.db, dbsqlc.TombstoneEventsParams{WorkspaceID: ws, Patterns: patterns})
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

// Expired is what one batch of the retention job deleted.
type Expired struct {
	Conversations int
	Events        int // tombstoned
}

// ExpireConversations deletes a batch of at most limit conversations past their retention
// (with their messages, SMS, notes and responses) and tombstones the events that mention
// them, in one short transaction.
func (s *Store) ExpireConversations(ctx context.Context, limit int) (Expired, error) {
	var out Expired
	err := s.InTx(ctx, func(tx *Tx) error {
		out = Expired{}
		rows, err := tx.sql.ExpiredConversations(ctx, tx.db, int32(limit))
		if err != nil || len(rows) == 0 {
			return err
		}
		byWorkspace := map[uuid.UUID][]dbsqlc.ExpiredConversationsRow{}
		for _, r := range rows {
			byWorkspace[r.WorkspaceID] = append(byWorkspace[r.WorkspaceID], r)
		}
		for ws, convs := range byWorkspace {
			ids := make([]uuid.UUID, len(convs))
			patterns := make([]string, 0, 2*len(convs))
			for i, c := range convs {
				ids[i] = c.ID
				patterns = append(patterns, "%"+c.ID.String()+"%", "%"+likeEscape(c.ShortID)+"%")
			}
			n, err := tx.sql.TombstoneEvents(ctx, tx.db, dbsqlc.TombstoneEventsParams{WorkspaceID: ws, Patterns: patterns})
			if err != nil {
				return err
			}
			out.Events += int(n)
			if _, err := tx.sql.DeleteChannelMessagesOf(ctx, tx.db, dbsqlc.DeleteChannelMessagesOfParams{WorkspaceID: ws, ConversationIds: ids}); err != nil {
				return err
			}
			if n, err = tx.sql.DeleteConversations(ctx, tx.db, dbsqlc.DeleteConversationsParams{WorkspaceID: ws, ConversationIds: ids}); err != nil {
				return err
			}
			out.Conversations += int(n)
		}
		return nil
	})
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
