package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// ContactRecord is a contact of a workspace as /api/contacts manages it (store.Contact is
// the runtime's partial view: what a visitor told an agent).
type ContactRecord = dbsqlc.Contact

// ContactList is a named list of contacts.
type ContactList struct {
	ID   uuid.UUID
	Name string
}

// ContactListSummary is a list with its count of live contacts.
type ContactListSummary = dbsqlc.ListContactListsRow

// NewContact is what creating a contact takes.
type NewContact struct {
	Name, Email, Phone       *string
	Tags                     []string
	Source                   string
	ConsentSMS, ConsentCalls bool
	// Timezone is the contact's own IANA time zone (nil: none).
	Timezone *string
}

// ContactFilter selects contacts; nil fields match any.
type ContactFilter struct {
	Deleted      bool // the soft-deleted ones instead of the live ones
	Tag          *string
	ListID       *uuid.UUID
	ConsentSMS   *bool
	ConsentCalls *bool
	Query        *string // escaped for LIKE by the caller
	AfterCreated *time.Time
	AfterID      *uuid.UUID
	Limit        int
}

func nonNilTags(t []string) []string {
	if t == nil {
		return []string{}
	}
	return t
}

// InsertContact creates a contact.
func (q *queries) InsertContact(ctx context.Context, ws uuid.UUID, c NewContact) (ContactRecord, error) {
	return q.sql.InsertContact(ctx, q.db, dbsqlc.InsertContactParams{WorkspaceID: ws, Name: c.Name, Email: c.Email, Phone: c.Phone,
		Tags: nonNilTags(c.Tags), Source: c.Source, ConsentSms: c.ConsentSMS, ConsentCalls: c.ConsentCalls, Timezone: c.Timezone})
}

// ContactByID is a contact of the workspace, deleted or not.
func (q *queries) ContactByID(ctx context.Context, ws, id uuid.UUID) (ContactRecord, error) {
	c, err := q.sql.ContactByID(ctx, q.db, dbsqlc.ContactByIDParams{WorkspaceID: ws, ID: id})
	return c, notFound("contact", err)
}

// LiveContactByPhone is the oldest live contact with that phone.
func (q *queries) LiveContactByPhone(ctx context.Context, ws uuid.UUID, phone string) (ContactRecord, error) {
	c, err := q.sql.LiveContactByPhone(ctx, q.db, dbsqlc.LiveContactByPhoneParams{WorkspaceID: ws, Phone: &phone})
	return c, notFound("contact", err)
}

// ListContacts lists the contacts f selects, newest first.
func (q *queries) ListContacts(ctx context.Context, ws uuid.UUID, f ContactFilter) ([]ContactRecord, error) {
	return q.sql.ListContacts(ctx, q.db, dbsqlc.ListContactsParams{WorkspaceID: ws, Deleted: f.Deleted, Tag: f.Tag, ListID: f.ListID,
		ConsentSms: f.ConsentSMS, ConsentCalls: f.ConsentCalls, Q: f.Query, AfterCreated: f.AfterCreated, AfterID: f.AfterID,
		MaxRows: int32(f.Limit)})
}

// UpdateContact replaces the changeable fields of a live contact.
func (q *queries) UpdateContact(ctx context.Context, ws, id uuid.UUID, c NewContact) (ContactRecord, error) {
	r, err := q.sql.UpdateContact(ctx, q.db, dbsqlc.UpdateContactParams{WorkspaceID: ws, ID: id, Name: c.Name, Email: c.Email, Phone: c.Phone,
		Tags: nonNilTags(c.Tags), ConsentSms: c.ConsentSMS, ConsentCalls: c.ConsentCalls, Timezone: c.Timezone})
	return r, notFound("contact", err)
}

// SoftDeleteContact marks a contact deleted (keeping the first deletion time).
func (q *queries) SoftDeleteContact(ctx context.Context, ws, id uuid.UUID) (ContactRecord, error) {
	r, err := q.sql.SoftDeleteContact(ctx, q.db, dbsqlc.SoftDeleteContactParams{WorkspaceID: ws, ID: id})
	return r, notFound("contact", err)
}

// RestoreContact undoes a soft delete.
func (q *queries) RestoreContact(ctx context.Context, ws, id uuid.UUID) (ContactRecord, error) {
	r, err := q.sql.RestoreContact(ctx, q.db, dbsqlc.RestoreContactParams{WorkspaceID: ws, ID: id})
	return r, notFound("contact", err)
}

// EnsureContactList is the list of that name (case-insensitive), created when missing.
func (q *queries) EnsureContactList(ctx context.Context, ws uuid.UUID, name string) (ContactList, error) {
	r, err := q.sql.EnsureContactList(ctx, q.db, dbsqlc.EnsureContactListParams{WorkspaceID: ws, Name: name})
	return ContactList(r), err
}

// ContactListByID is a list of the workspace.
func (q *queries) ContactListByID(ctx context.Context, ws, id uuid.UUID) (ContactList, error) {
	r, err := q.sql.ContactListByID(ctx, q.db, dbsqlc.ContactListByIDParams{WorkspaceID: ws, ID: id})
	return ContactList(r), notFound("contact list", err)
}

// ListContactLists lists the workspace's lists by name.
func (q *queries) ListContactLists(ctx context.Context, ws uuid.UUID) ([]ContactListSummary, error) {
	return q.sql.ListContactLists(ctx, q.db, ws)
}

// SetContactLists makes the contact a member of exactly lists.
func (q *queries) SetContactLists(ctx context.Context, ws, contactID uuid.UUID, lists []uuid.UUID) error {
	return q.inTx(ctx, func(q *queries) error {
		if err := q.sql.ClearContactLists(ctx, q.db, dbsqlc.ClearContactListsParams{WorkspaceID: ws, ContactID: contactID}); err != nil {
			return err
		}
		for _, l := range lists {
			if err := q.sql.AddContactToList(ctx, q.db, dbsqlc.AddContactToListParams{WorkspaceID: ws, ListID: l, ContactID: contactID}); err != nil {
				return err
			}
		}
		return nil
	})
}

// ContactListsOf names the lists of each contact.
func (q *queries) ContactListsOf(ctx context.Context, ws uuid.UUID, contacts []uuid.UUID) (map[uuid.UUID][]ContactList, error) {
	rows, err := q.sql.ContactListsOf(ctx, q.db, dbsqlc.ContactListsOfParams{WorkspaceID: ws, ContactIds: contacts})
	if err != nil {
		return nil, err
	}
	out := map[uuid.UUID][]ContactList{}
	for _, r := range rows {
		out[r.ContactID] = append(out[r.ContactID], ContactList{ID: r.ID, Name: r.Name})
	}
	return out, nil
}

// AddContactToList adds a contact to a list (nothing when it is a member already).
func (q *queries) AddContactToList(ctx context.Context, ws, listID, contactID uuid.UUID) error {
	return q.sql.AddContactToList(ctx, q.db, dbsqlc.AddContactToListParams{WorkspaceID: ws, ListID: listID, ContactID: contactID})
}

// LockLiveContactsByPhone locks the live contacts of ws with these phone numbers, in id
// order, until the transaction ends: a writer that will update several of them in another
// order takes their locks first, in a bulk soft delete's order.
func (q *queries) LockLiveContactsByPhone(ctx context.Context, ws uuid.UUID, phones []string) error {
	return q.sql.LockLiveContactsByPhone(ctx, q.db, dbsqlc.LockLiveContactsByPhoneParams{WorkspaceID: ws, Phones: phones})
}

// KeyShareContacts is KeyShareContact for several contacts, each of the workspace at the same
// place of workspaceIDs, in id order.
func (q *queries) KeyShareContacts(ctx context.Context, workspaceIDs, ids []uuid.UUID) error {
	return q.sql.KeyShareContacts(ctx, q.db, dbsqlc.KeyShareContactsParams{WorkspaceIds: workspaceIDs, Ids: ids})
}

// KeyShareContact takes the KEY SHARE lock of contact id of ws until the transaction ends (a
// contact that is gone is skipped): a transaction that writes a contact's conversation and
// maybe the contact takes it first, in a contact erasure's order (the contact, then its
// conversations).
func (q *queries) KeyShareContact(ctx context.Context, ws, id uuid.UUID) error {
	return q.sql.KeyShareContact(ctx, q.db, dbsqlc.KeyShareContactParams{WorkspaceID: ws, ID: id})
}
