package contacts_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/contacts"
	"switchboard/store"
	"switchboard/store/storetest"
)

// world is the contacts service over its own database, with a workspace.
type world struct {
	svc   *contacts.Service
	store *store.Store
	ws    uuid.UUID
}

func newWorld(t *testing.T) *world {
	t.Helper()
	st := storetest.New(t)
	ws, err := st.CreateWorkspace(context.Background(), "acme", 1_000_000_000)
	require.NoError(t, err)
	return &world{svc: contacts.New(st), store: st, ws: ws.ID}
}

func (w *world) create(t *testing.T, in contacts.Input) contacts.Contact {
	t.Helper()
	c, err := w.svc.Create(context.Background(), w.ws, in)
	require.NoError(t, err)
	return c
}

// list is the ids of the contacts f selects, in the order listed.
func (w *world) list(t *testing.T, f contacts.Filter) []uuid.UUID {
	t.Helper()
	page, err := w.svc.List(context.Background(), w.ws, f)
	require.NoError(t, err)
	return ids(page.Data)
}

func ids(cs []contacts.Contact) []uuid.UUID {
	out := []uuid.UUID{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func sorted(in ...uuid.UUID) []uuid.UUID {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return out
}

func ptr[T any](v T) *T { return &v }

// invalid requires err to be an API error of the given param and code ("" for either: any).
func invalid(t *testing.T, err error, kind apierr.Kind, param, code string) {
	t.Helper()
	e := apierr.As(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, kind, e.Kind, e.Message)
	if param != "" {
		require.Equal(t, param, e.Param, e.Message)
	}
	if code != "" {
		require.Equal(t, code, e.Code, e.Message)
	}
}

func TestValidE164(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{"+14155550100": true, "+442071838750": true, "+1234567": true,
		"14155550100": false, "+0415555010": false, "+1 415 555 0100": false, "+123456": false, "+1234567890123456": false} {
		require.Equal(t, want, contacts.ValidE164(s), s)
	}
}

func TestCreateNormalizesAndRefusesWhatCannotBeReached(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	ada := w.create(t, contacts.Input{Name: ptr("  Ada "), Phone: ptr("+1 (415) 555-0100"), Tags: []string{"vip", "beta"},
		Lists: []string{"Newsletter"}, ConsentSMS: ptr(true)})
	require.Equal(t, "+14155550100", *ada.Phone, "E.164 with the punctuation removed")
	require.Equal(t, "Ada", *ada.Name)
	require.Equal(t, contacts.SourceAPI, ada.Source)
	require.Equal(t, []string{"vip", "beta"}, ada.Tags)
	require.Len(t, ada.Lists, 1)
	require.Equal(t, "Newsletter", ada.Lists[0].Name)
	require.True(t, ada.ConsentSMS)
	require.False(t, ada.ConsentCalls)

	for _, c := range []struct {
		in          contacts.Input
		param, code string
	}{
		{contacts.Input{Name: ptr("Nobody"), Phone: ptr("0415 555")}, "phone", ""},
		{contacts.Input{Name: ptr("Unreachable")}, "", "missing_contact_point"},
		{contacts.Input{Email: ptr("not an email")}, "email", ""},
	} {
		_, err := w.svc.Create(ctx, w.ws, c.in)
		invalid(t, err, apierr.KindInvalid, c.param, c.code)
	}
	page, err := w.svc.List(ctx, w.ws, contacts.Filter{})
	require.NoError(t, err)
	require.Len(t, page.Data, 1, "nothing written by the refused creates")
}

func TestFiltersAndPages(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ada := w.create(t, contacts.Input{Name: ptr("Ada"), Phone: ptr("+14155550100"), Tags: []string{"vip", "beta"}, Lists: []string{"Newsletter"}, ConsentSMS: ptr(true)})
	bob := w.create(t, contacts.Input{Name: ptr("Bob"), Email: ptr("bob@example.com"), Tags: []string{"beta"}, ConsentCalls: ptr(true)})
	pct := w.create(t, contacts.Input{Name: ptr("100% Carol"), Email: ptr("carol@example.org")})

	require.Equal(t, []uuid.UUID{pct.ID, bob.ID, ada.ID}, w.list(t, contacts.Filter{}), "newest first")
	require.Equal(t, sorted(ada.ID, bob.ID), sorted(w.list(t, contacts.Filter{Tag: "beta"})...))
	require.Equal(t, []uuid.UUID{ada.ID}, w.list(t, contacts.Filter{Tag: "vip"}))
	require.Equal(t, []uuid.UUID{ada.ID}, w.list(t, contacts.Filter{ListID: &ada.Lists[0].ID}))
	require.Equal(t, []uuid.UUID{ada.ID}, w.list(t, contacts.Filter{ConsentSMS: ptr(true)}))
	require.Equal(t, []uuid.UUID{pct.ID, bob.ID}, w.list(t, contacts.Filter{ConsentSMS: ptr(false)}))
	require.Equal(t, []uuid.UUID{bob.ID}, w.list(t, contacts.Filter{ConsentCalls: ptr(true)}))
	require.Equal(t, []uuid.UUID{bob.ID}, w.list(t, contacts.Filter{Query: "EXAMPLE.COM"}), "any case")
	require.Equal(t, []uuid.UUID{pct.ID}, w.list(t, contacts.Filter{Query: "100%"}), "% is a character, not a wildcard")
	require.Empty(t, w.list(t, contacts.Filter{Query: "_"}), "so is _")

	// Pages follow each other without gaps or repeats.
	var seen []uuid.UUID
	f := contacts.Filter{Limit: 2}
	for {
		page, err := w.svc.List(context.Background(), w.ws, f)
		require.NoError(t, err)
		seen = append(seen, ids(page.Data)...)
		if !page.HasMore {
			require.Nil(t, page.NextAfter)
			break
		}
		f.After = *page.NextAfter
	}
	require.Equal(t, []uuid.UUID{pct.ID, bob.ID, ada.ID}, seen)

	_, err := w.svc.List(context.Background(), w.ws, contacts.Filter{Limit: contacts.MaxPage + 1})
	invalid(t, err, apierr.KindInvalid, "limit", "")
	_, err = w.svc.List(context.Background(), w.ws, contacts.Filter{After: "not-an-id"})
	invalid(t, err, apierr.KindInvalid, "after", "")
}

func TestUpdateChangesOnlyTheFieldsGiven(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	bob := w.create(t, contacts.Input{Name: ptr("Bob"), Email: ptr("bob@example.com"), Tags: []string{"beta"}})

	patched, err := w.svc.Update(ctx, w.ws, bob.ID, json.RawMessage(`{"phone":"+442071838750","email":null,"consent_sms":true}`))
	require.NoError(t, err)
	require.Nil(t, patched.Email, "null clears")
	require.Equal(t, "+442071838750", *patched.Phone)
	require.Equal(t, "Bob", *patched.Name, "absent: unchanged")
	require.Equal(t, []string{"beta"}, patched.Tags)
	require.True(t, patched.ConsentSMS)

	_, err = w.svc.Update(ctx, w.ws, bob.ID, json.RawMessage(`{"phone":null}`))
	invalid(t, err, apierr.KindInvalid, "", "missing_contact_point")
	_, err = w.svc.Update(ctx, w.ws, bob.ID, json.RawMessage(`{"nickname":"B"}`))
	invalid(t, err, apierr.KindInvalid, "nickname", "unknown_field")
	_, err = w.svc.Update(ctx, w.ws, bob.ID, json.RawMessage(`[]`))
	invalid(t, err, apierr.KindInvalid, "", "invalid_json")
	_, err = w.svc.Update(ctx, w.ws, uuid.New(), json.RawMessage(`{"name":"X"}`))
	invalid(t, err, apierr.KindNotFound, "id", "")

	moved, err := w.svc.Update(ctx, w.ws, bob.ID, json.RawMessage(`{"lists":["A","B"]}`))
	require.NoError(t, err)
	require.Len(t, moved.Lists, 2)
	moved, err = w.svc.Update(ctx, w.ws, bob.ID, json.RawMessage(`{"lists":["B"]}`))
	require.NoError(t, err)
	require.Equal(t, "B", moved.Lists[0].Name)
	require.Len(t, moved.Lists, 1, "lists given replace the contact's lists")
}

// TestAContactAnAgentCollectedKeepsItsPhoneUntilItChanges: a contact from a conversation (a
// freely typed phone) can be tagged and given consent without its phone being rewritten;
// changing the phone holds it to E.164.
func TestAContactAnAgentCollectedKeepsItsPhoneUntilItChanges(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	var id uuid.UUID
	require.NoError(t, w.store.InTx(ctx, func(tx *store.Tx) error {
		var err error
		id, err = tx.CreateContact(ctx, w.ws, store.Contact{Name: ptr("Walk-in"), Phone: ptr("555 010 2030")})
		return err
	}))
	c, err := w.svc.Get(ctx, w.ws, id)
	require.NoError(t, err)
	require.Equal(t, contacts.SourceConversation, c.Source)
	c, err = w.svc.Update(ctx, w.ws, id, json.RawMessage(`{"tags":["walk-in"],"consent_sms":true}`))
	require.NoError(t, err)
	require.Equal(t, "555 010 2030", *c.Phone, "kept as typed")
	require.Equal(t, []string{"walk-in"}, c.Tags)
	_, err = w.svc.Update(ctx, w.ws, id, json.RawMessage(`{"phone":"555 010 2030"}`))
	invalid(t, err, apierr.KindInvalid, "phone", "")
}

func TestSoftDeleteHidesAndRestoreBringsBack(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	ada := w.create(t, contacts.Input{Name: ptr("Ada"), Phone: ptr("+14155550100"), Tags: []string{"vip", "beta"}, Lists: []string{"Newsletter"}})
	bob := w.create(t, contacts.Input{Name: ptr("Bob"), Email: ptr("bob@example.com")})

	deleted, err := w.svc.Delete(ctx, w.ws, ada.ID)
	require.NoError(t, err)
	require.NotNil(t, deleted.DeletedAt)
	again, err := w.svc.Delete(ctx, w.ws, ada.ID)
	require.NoError(t, err)
	require.Equal(t, deleted.DeletedAt, again.DeletedAt, "deleting a deleted contact changes nothing")
	require.Equal(t, []uuid.UUID{bob.ID}, w.list(t, contacts.Filter{}))
	require.Empty(t, w.list(t, contacts.Filter{Tag: "vip"}), "out of searches")
	require.Equal(t, []uuid.UUID{ada.ID}, w.list(t, contacts.Filter{Deleted: true}))
	lists, err := w.svc.Lists(ctx, w.ws)
	require.NoError(t, err)
	require.Zero(t, lists.Data[0].Contacts, "lists count live contacts")
	got, err := w.svc.Get(ctx, w.ws, ada.ID)
	require.NoError(t, err, "a deleted contact can still be read")
	require.NotNil(t, got.DeletedAt)
	_, err = w.svc.Update(ctx, w.ws, ada.ID, json.RawMessage(`{"name":"Ada L."}`))
	invalid(t, err, apierr.KindConflict, "", "contact_deleted")

	restored, err := w.svc.Restore(ctx, w.ws, ada.ID)
	require.NoError(t, err)
	require.Nil(t, restored.DeletedAt)
	require.Equal(t, []string{"vip", "beta"}, restored.Tags, "restored with its tags")
	require.Len(t, restored.Lists, 1, "and its lists")
	require.Equal(t, sorted(ada.ID, bob.ID), sorted(w.list(t, contacts.Filter{})...))

	// Another workspace sees none of it.
	other, err := w.store.CreateWorkspace(ctx, "other", 1_000_000_000)
	require.NoError(t, err)
	for _, op := range []func(context.Context, uuid.UUID, uuid.UUID) (contacts.Contact, error){w.svc.Get, w.svc.Delete, w.svc.Restore} {
		_, err = op(ctx, other.ID, ada.ID)
		invalid(t, err, apierr.KindNotFound, "id", "")
	}
}
