// Package contacts manages the people a workspace talks with: created through /api/contacts
// or imported from CSV, tagged, grouped in lists, with their consent to SMS and calls, and
// soft-deleted (hidden, never messaged, restorable). Outbound campaigns read them.
package contacts

import (
	"context"
	"encoding/json"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/store"
)

// Limits of a contact's fields.
const (
	MaxNameLen  = 200
	MaxEmailLen = 254
	MaxTags     = 50
	MaxTagLen   = 50
	MaxLists    = 20
	MaxListLen  = 100
	// MaxPage is the largest page of GET /api/contacts.
	MaxPage     = 200
	defaultPage = 50
)

// e164 is a phone number in E.164: a plus, a non-zero digit and up to 14 more digits.
var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// ValidE164 reports whether s is a phone number in E.164.
func ValidE164(s string) bool { return e164.MatchString(s) }

// Sources of a contact.
const (
	SourceAPI          = "api"
	SourceImport       = "import"
	SourceConversation = "conversation"
)

// ListRef names a list a contact belongs to.
type ListRef struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
}

// Contact is a contact as /api answers it.
type Contact struct {
	ID           uuid.UUID `json:"id"`
	Object       string    `json:"object"`
	Name         *string   `json:"name"`
	Email        *string   `json:"email"`
	Phone        *string   `json:"phone"`
	Tags         []string  `json:"tags"`
	Lists        []ListRef `json:"lists"`
	Source       string    `json:"source"`
	ConsentSMS   bool      `json:"consent_sms"`
	ConsentCalls bool      `json:"consent_calls"`
	// Timezone is the contact's own IANA time zone; voice campaigns call inside their window
	// in it (nil: derived from the phone number, else the campaign's).
	Timezone  *string    `json:"timezone"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	DeletedAt *time.Time `json:"deleted_at"`
}

// Page is a page of contacts.
type Page struct {
	Object string    `json:"object"`
	Data   []Contact `json:"data"`
	// HasMore says another page follows; pass NextAfter as `after` to read it.
	HasMore   bool    `json:"has_more"`
	NextAfter *string `json:"next_after"`
}

// ContactListView is a contact list with its count of live contacts.
type ContactListView struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	Contacts  int64     `json:"contacts"`
	CreatedAt time.Time `json:"created_at"`
}

// ListsPage is every list of the workspace.
type ListsPage struct {
	Object string            `json:"object"`
	Data   []ContactListView `json:"data"`
}

// Input is a contact to create; for an update, the fields given (see Patch).
type Input struct {
	Name         *string  `json:"name"`
	Email        *string  `json:"email"`
	Phone        *string  `json:"phone"`
	Tags         []string `json:"tags"`
	Lists        []string `json:"lists"`
	ConsentSMS   *bool    `json:"consent_sms"`
	ConsentCalls *bool    `json:"consent_calls"`
	Timezone     *string  `json:"timezone"`
}

// Filter selects contacts for List.
type Filter struct {
	Tag          string
	ListID       *uuid.UUID
	ConsentSMS   *bool
	ConsentCalls *bool
	Query        string
	Deleted      bool
	Limit        int
	After        string // the id of the previous page's last contact
}

// Service manages contacts over the store.
type Service struct {
	store *store.Store
}

// New returns the service.
func New(st *store.Store) *Service { return &Service{store: st} }

// Create validates and stores a contact.
func (s *Service) Create(ctx context.Context, ws uuid.UUID, in Input) (Contact, error) {
	nc, err := validate(in, "")
	if err != nil {
		return Contact{}, err
	}
	nc.Source = SourceAPI
	var id uuid.UUID
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		c, err := tx.InsertContact(ctx, ws, nc)
		if err != nil {
			return err
		}
		id = c.ID
		return setLists(ctx, tx, ws, c.ID, in.Lists)
	})
	if err != nil {
		return Contact{}, err
	}
	return s.Get(ctx, ws, id)
}

// Get is one contact, deleted or not.
func (s *Service) Get(ctx context.Context, ws, id uuid.UUID) (Contact, error) {
	c, err := s.store.ContactByID(ctx, ws, id)
	if err != nil {
		return Contact{}, apierr.WithParam(err, "id")
	}
	out, err := s.views(ctx, ws, []store.ContactRecord{c})
	if err != nil {
		return Contact{}, err
	}
	return out[0], nil
}

// List lists the contacts f selects, newest first.
func (s *Service) List(ctx context.Context, ws uuid.UUID, f Filter) (Page, error) {
	limit := f.Limit
	if limit == 0 {
		limit = defaultPage
	}
	if limit < 1 || limit > MaxPage {
		return Page{}, apierr.Invalid("limit", "invalid_value", "limit must be between 1 and %d.", MaxPage)
	}
	sf := store.ContactFilter{Deleted: f.Deleted, ListID: f.ListID, ConsentSMS: f.ConsentSMS, ConsentCalls: f.ConsentCalls, Limit: limit + 1}
	if f.Tag != "" {
		sf.Tag = &f.Tag
	}
	if q := strings.TrimSpace(f.Query); q != "" {
		escaped := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(q)
		sf.Query = &escaped
	}
	if f.After != "" {
		id, err := uuid.Parse(f.After)
		if err != nil {
			return Page{}, apierr.Invalid("after", "invalid_value", "after must be the id of a contact (next_after of the previous page).")
		}
		prev, err := s.store.ContactByID(ctx, ws, id)
		if err != nil {
			return Page{}, apierr.WithParam(err, "after")
		}
		sf.AfterCreated, sf.AfterID = &prev.CreatedAt, &prev.ID
	}
	rows, err := s.store.ListContacts(ctx, ws, sf)
	if err != nil {
		return Page{}, err
	}
	page := Page{Object: "list"}
	if len(rows) > limit {
		rows, page.HasMore = rows[:limit], true
		next := rows[limit-1].ID.String()
		page.NextAfter = &next
	}
	if page.Data, err = s.views(ctx, ws, rows); err != nil {
		return Page{}, err
	}
	return page, nil
}

// Update changes the fields given in raw (a JSON object); null clears name, email or phone.
// A deleted contact cannot be changed until restored.
func (s *Service) Update(ctx context.Context, ws, id uuid.UUID, raw json.RawMessage) (Contact, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return Contact{}, apierr.Invalid("", "invalid_json", "The request body must be a JSON object of fields to change.")
	}
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		cur, err := tx.ContactByID(ctx, ws, id)
		if err != nil {
			return apierr.WithParam(err, "id")
		}
		if cur.DeletedAt != nil {
			return apierr.Conflict("contact_deleted", "This contact is deleted; restore it (POST /api/contacts/{id}/restore) before changing it.")
		}
		in := Input{Name: cur.Name, Email: cur.Email, Phone: cur.Phone, Tags: cur.Tags, ConsentSMS: &cur.ConsentSms, ConsentCalls: &cur.ConsentCalls,
			Timezone: cur.Timezone}
		var patch Input
		if err := json.Unmarshal(raw, &patch); err != nil {
			return apierr.Invalid("", "invalid_json", "The request body does not fit the contact's fields: %v", err)
		}
		for key := range fields {
			switch key {
			case "name":
				in.Name = patch.Name
			case "email":
				in.Email = patch.Email
			case "phone":
				in.Phone = patch.Phone
			case "tags":
				in.Tags = patch.Tags
			case "lists":
				in.Lists = patch.Lists
			case "consent_sms":
				in.ConsentSMS = patch.ConsentSMS
			case "consent_calls":
				in.ConsentCalls = patch.ConsentCalls
			case "timezone":
				in.Timezone = patch.Timezone
			default:
				return apierr.Invalid(key, "unknown_field", "%s is not a field of a contact.", key)
			}
		}
		// A contact an agent collected may hold a phone typed freely, or a name only: only the
		// fields this call changes are held to the API's rules.
		_, phoneGiven := fields["phone"]
		_, emailGiven := fields["email"]
		nc, err := check(in, "", phoneGiven, phoneGiven || emailGiven)
		if err != nil {
			return err
		}
		if _, err := tx.UpdateContact(ctx, ws, id, nc); err != nil {
			return err
		}
		if _, ok := fields["lists"]; ok {
			return setLists(ctx, tx, ws, id, in.Lists)
		}
		return nil
	})
	if err != nil {
		return Contact{}, err
	}
	return s.Get(ctx, ws, id)
}

// Delete soft-deletes a contact: it leaves lists and searches, campaigns skip it, and
// Restore brings it back. Deleting a deleted contact changes nothing.
func (s *Service) Delete(ctx context.Context, ws, id uuid.UUID) (Contact, error) {
	if _, err := s.store.SoftDeleteContact(ctx, ws, id); err != nil {
		return Contact{}, apierr.WithParam(err, "id")
	}
	return s.Get(ctx, ws, id)
}

// Restore undoes a soft delete.
func (s *Service) Restore(ctx context.Context, ws, id uuid.UUID) (Contact, error) {
	if _, err := s.store.RestoreContact(ctx, ws, id); err != nil {
		return Contact{}, apierr.WithParam(err, "id")
	}
	return s.Get(ctx, ws, id)
}

// Lists lists the workspace's contact lists.
func (s *Service) Lists(ctx context.Context, ws uuid.UUID) (ListsPage, error) {
	rows, err := s.store.ListContactLists(ctx, ws)
	if err != nil {
		return ListsPage{}, err
	}
	out := ListsPage{Object: "list", Data: make([]ContactListView, 0, len(rows))}
	for _, r := range rows {
		out.Data = append(out.Data, ContactListView{ID: r.ID, Name: r.Name, Contacts: r.Contacts, CreatedAt: r.CreatedAt})
	}
	return out, nil
}

func (s *Service) views(ctx context.Context, ws uuid.UUID, rows []store.ContactRecord) ([]Contact, error) {
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	lists, err := s.store.ContactListsOf(ctx, ws, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Contact, 0, len(rows))
	for _, r := range rows {
		c := Contact{ID: r.ID, Object: "contact", Name: r.Name, Email: r.Email, Phone: r.Phone, Tags: r.Tags, Lists: []ListRef{},
			Source: r.Source, ConsentSMS: r.ConsentSms, ConsentCalls: r.ConsentCalls, Timezone: r.Timezone, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
			DeletedAt: r.DeletedAt}
		if c.Tags == nil {
			c.Tags = []string{}
		}
		for _, l := range lists[r.ID] {
			c.Lists = append(c.Lists, ListRef(l))
		}
		out = append(out, c)
	}
	return out, nil
}

// setLists makes the contact a member of exactly the named lists, creating missing ones.
func setLists(ctx context.Context, tx *store.Tx, ws, contactID uuid.UUID, names []string) error {
	lists, err := ensureLists(ctx, tx, ws, names)
	if err != nil {
		return err
	}
	ids := make([]uuid.UUID, 0, len(names))
	for _, n := range names {
		ids = append(ids, lists[strings.ToLower(n)])
	}
	return tx.SetContactLists(ctx, ws, contactID, ids)
}

// ensureLists finds or creates the lists of these names (case-insensitive, as a list's name
// is unique), by their names in lower case. It ensures them in that order: ensuring a list
// locks its row (or waits for another transaction creating the same name) until the
// transaction ends, and two writers naming the same lists in two orders (two imports, two
// contacts' updates) would otherwise each hold one the other waits for.
func ensureLists(ctx context.Context, tx *store.Tx, ws uuid.UUID, names []string) (map[string]uuid.UUID, error) {
	byKey := map[string]string{} // lower case: the first spelling given, which a new list is created with
	var keys []string
	for _, n := range names {
		k := strings.ToLower(n)
		if _, ok := byKey[k]; !ok {
			byKey[k] = n
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	ids := make(map[string]uuid.UUID, len(keys))
	for _, k := range keys {
		l, err := tx.EnsureContactList(ctx, ws, byKey[k])
		if err != nil {
			return nil, err
		}
		ids[k] = l.ID
	}
	return ids, nil
}

// validate checks a new contact's fields and normalizes them (trimmed, empty strings as
// absent, tags and lists deduplicated). prefix is put before each param ("" for the API).
func validate(in Input, prefix string) (store.NewContact, error) {
	return check(in, prefix, true, true)
}

// check is validate, checking the phone only when checkPhone and that the contact has a
// phone or an email only when needPoint.
func check(in Input, prefix string, checkPhone, needPoint bool) (store.NewContact, error) {
	out := store.NewContact{Name: trimmed(in.Name), Email: trimmed(in.Email), Phone: trimmed(in.Phone)}
	if out.Name != nil && len([]rune(*out.Name)) > MaxNameLen {
		return out, apierr.Invalid(prefix+"name", "invalid_value", "name must be at most %d characters.", MaxNameLen)
	}
	if out.Email != nil {
		addr, err := mail.ParseAddress(*out.Email)
		if err != nil || addr.Address != *out.Email || len(*out.Email) > MaxEmailLen {
			return out, apierr.Invalid(prefix+"email", "invalid_value", "email must be an email address such as ada@example.com.")
		}
	}
	if out.Phone != nil && checkPhone {
		compact := strings.NewReplacer(" ", "", "-", "", "(", "", ")", "", ".", "").Replace(*out.Phone)
		if !ValidE164(compact) {
			return out, apierr.Invalid(prefix+"phone", "invalid_phone", "phone must be in E.164 form: + then the country code and number, 8 to 15 digits, such as +14155550123.")
		}
		out.Phone = &compact
	}
	if out.Phone == nil && out.Email == nil && needPoint {
		return out, apierr.Invalid(prefix+"phone", "missing_contact_point", "A contact needs a phone (E.164) or an email.")
	}
	tags, err := cleanNames(in.Tags, MaxTags, MaxTagLen, prefix+"tags")
	if err != nil {
		return out, err
	}
	out.Tags = tags
	if _, err := cleanNames(in.Lists, MaxLists, MaxListLen, prefix+"lists"); err != nil {
		return out, err
	}
	if in.ConsentSMS != nil {
		out.ConsentSMS = *in.ConsentSMS
	}
	if in.ConsentCalls != nil {
		out.ConsentCalls = *in.ConsentCalls
	}
	if tz := trimmed(in.Timezone); tz != nil {
		if !ValidTimezone(*tz) {
			return out, apierr.Invalid(prefix+"timezone", "invalid_value", "timezone must be an IANA time zone name such as America/Chicago or Europe/Berlin.")
		}
		out.Timezone = tz
	}
	return out, nil
}

// MaxTimezoneLen bounds a time zone name.
const MaxTimezoneLen = 64

// ValidTimezone reports whether name is an IANA time zone this server knows ("UTC" too;
// not "Local", which is the server's own).
func ValidTimezone(name string) bool {
	if name == "" || name == "Local" || len(name) > MaxTimezoneLen {
		return false
	}
	_, err := time.LoadLocation(name)
	return err == nil
}

func trimmed(s *string) *string {
	if s == nil {
		return nil
	}
	t := strings.TrimSpace(*s)
	if t == "" {
		return nil
	}
	return &t
}

// cleanNames trims, drops empties and duplicates (case-insensitively), and checks counts.
func cleanNames(in []string, maxItems, maxLen int, param string) ([]string, error) {
	out := []string{}
	seen := map[string]bool{}
	for _, n := range in {
		n = strings.TrimSpace(n)
		if n == "" || seen[strings.ToLower(n)] {
			continue
		}
		if len([]rune(n)) > maxLen {
			return nil, apierr.Invalid(param, "invalid_value", "each of %s must be at most %d characters.", param, maxLen)
		}
		seen[strings.ToLower(n)] = true
		out = append(out, n)
	}
	if len(out) > maxItems {
		return nil, apierr.Invalid(param, "invalid_value", "%s takes at most %d items.", param, maxItems)
	}
	return slices.Clip(out), nil
}
