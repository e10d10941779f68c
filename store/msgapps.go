package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/store/internal/dbsqlc"
)

// AppInbound is a message a messaging app delivered to a channel.
type AppInbound struct {
	ChannelID         uuid.UUID
	ProviderMessageID string
	Remote, Local     string
	Body              string // the text, or a placeholder such as "[image]"
	Kind              string // "text", or the app's kind of message (image, sticker, ...)
}

// RecordAppInbound stores an app's inbound message once per app message id: a retried
// webhook returns false and writes nothing.
func (q *queries) RecordAppInbound(ctx context.Context, workspaceID uuid.UUID, m AppInbound) (uuid.UUID, bool, error) {
	id, err := q.sql.InsertAppInboundMessage(ctx, q.db, dbsqlc.InsertAppInboundMessageParams{WorkspaceID: workspaceID, ChannelID: &m.ChannelID,
		ProviderMessageID: &m.ProviderMessageID, Remote: m.Remote, Local: m.Local, Body: m.Body, Kind: m.Kind})
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	return id, err == nil, err
}

// AppUser is a person as a messaging app names them.
type AppUser struct {
	App   string // the channel type: msgapp_1 ... msgapp_4
	ID    string // the app's id of the person (wa_id, page-scoped id, chat id)
	Name  string // the name the app shows, "" when it gives none
	Phone string // E.164, when the app's id is a phone number (WhatsApp)
}

// ContactForAppUser returns the workspace's contact of an app user, creating it (with the
// app's name, and its phone number when the id is one: an existing contact with that number
// is the one) when there is none. An unnamed contact takes the name the app gives.
func (q *queries) ContactForAppUser(ctx context.Context, workspaceID uuid.UUID, u AppUser) (uuid.UUID, error) {
	c, err := q.sql.ContactByAppUser(ctx, q.db, dbsqlc.ContactByAppUserParams{WorkspaceID: workspaceID, App: u.App, AppUserID: u.ID})
	if err == nil {
		if u.Name != "" && (c.Name == nil || *c.Name == "") {
			err = q.sql.NameContactIfUnnamed(ctx, q.db, dbsqlc.NameContactIfUnnamedParams{WorkspaceID: workspaceID, ID: c.ID, Name: &u.Name})
		}
		return c.ID, err
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, err
	}
	var id uuid.UUID
	created := false
	if u.Phone != "" {
		byPhone, err := q.sql.ContactByPhone(ctx, q.db, dbsqlc.ContactByPhoneParams{WorkspaceID: workspaceID, Phone: &u.Phone})
		switch {
		case err == nil:
			id = byPhone.ID
			if u.Name != "" && (byPhone.Name == nil || *byPhone.Name == "") {
				if err := q.sql.NameContactIfUnnamed(ctx, q.db, dbsqlc.NameContactIfUnnamedParams{WorkspaceID: workspaceID, ID: id, Name: &u.Name}); err != nil {
					return uuid.Nil, err
				}
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return uuid.Nil, err
		}
	}
	if id == uuid.Nil {
		if id, err = q.sql.CreateAppContact(ctx, q.db, dbsqlc.CreateAppContactParams{WorkspaceID: workspaceID, Name: nonEmpty(u.Name), Phone: nonEmpty(u.Phone)}); err != nil {
			return uuid.Nil, err
		}
		created = true
	}
	linked, err := q.linkAppUser(ctx, workspaceID, u, id)
	if err != nil {
		return uuid.Nil, err
	}
	if linked != id && created {
		// Another webhook of the same new person tied the id to the contact it created
		// first (this one waited for it to commit): one person, one contact.
		if err := q.sql.DeleteUnlinkedAppContact(ctx, q.db, dbsqlc.DeleteUnlinkedAppContactParams{WorkspaceID: workspaceID, ID: id}); err != nil {
			return uuid.Nil, err
		}
	}
	return linked, nil
}

// linkAppUser ties u's id to contact id and returns the contact it is tied to: the one a
// concurrent transaction tied it to first, when that one is live; id otherwise (the id's
// contact was deleted: it is tied again).
func (q *queries) linkAppUser(ctx context.Context, workspaceID uuid.UUID, u AppUser, id uuid.UUID) (uuid.UUID, error) {
	linked, err := q.sql.LinkAppUser(ctx, q.db, dbsqlc.LinkAppUserParams{WorkspaceID: workspaceID, App: u.App, AppUserID: u.ID, ContactID: id})
	if !errors.Is(err, pgx.ErrNoRows) {
		return linked, err
	}
	tie, err := q.sql.AppUserContact(ctx, q.db, dbsqlc.AppUserContactParams{WorkspaceID: workspaceID, App: u.App, AppUserID: u.ID})
	if err != nil || tie.Live {
		return tie.ContactID, err
	}
	return id, q.sql.RelinkAppUser(ctx, q.db, dbsqlc.RelinkAppUserParams{WorkspaceID: workspaceID, App: u.App, AppUserID: u.ID, ContactID: id})
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// LastInboundFrom is when remote last wrote on the channel (the zero time when never): the
// start of a messaging app's customer-service window.
func (q *queries) LastInboundFrom(ctx context.Context, channelID uuid.UUID, remote string) (time.Time, error) {
	t, err := q.sql.LastInboundFrom(ctx, q.db, dbsqlc.LastInboundFromParams{ChannelID: &channelID, Remote: remote})
	if err != nil || t.Unix() == 0 {
		return time.Time{}, err
	}
	return t, nil
}

// MarkNeedsTemplate records that a conversation's window closed: a free-form reply was not
// sent, and only an approved template reaches the person until they write again.
func (q *queries) MarkNeedsTemplate(ctx context.Context, workspaceID, conversationID uuid.UUID) error {
	return q.sql.MarkNeedsTemplate(ctx, q.db, dbsqlc.MarkNeedsTemplateParams{WorkspaceID: workspaceID, ConversationID: conversationID})
}

// ClearNeedsTemplate reopens the window of remote's conversations on the channel: they wrote.
func (q *queries) ClearNeedsTemplate(ctx context.Context, channelID uuid.UUID, remote string) error {
	return q.sql.ClearNeedsTemplate(ctx, q.db, dbsqlc.ClearNeedsTemplateParams{ChannelID: channelID, Remote: remote})
}

// NeedsTemplate says since when a conversation needs a template (nil: its window is open, or
// it is no channel's).
func (q *queries) NeedsTemplate(ctx context.Context, workspaceID, conversationID uuid.UUID) (*time.Time, error) {
	t, err := q.sql.NeedsTemplate(ctx, q.db, dbsqlc.NeedsTemplateParams{WorkspaceID: workspaceID, ConversationID: conversationID})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return t, err
}
