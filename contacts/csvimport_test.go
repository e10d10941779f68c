package contacts_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/contacts"
	"switchboard/store"
	"switchboard/store/storetest"
)

func TestImportReportsEachBadRowAndImportsTheRest(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	existing := w.create(t, contacts.Input{Name: ptr("Ada"), Phone: ptr("+14155550100"), Tags: []string{"vip"}})
	csv := "\xef\xbb\xbfName,Phone,Email,Tags,Consent_SMS\n" + // a spreadsheet's byte-order mark
		"Ada Lovelace,+14155550100,,beta,yes\n" + // row 2: updates Ada
		"Bob,+14155550111,,beta;gold,1\n" + // row 3: new
		"Carol,555-0199,,,\n" + // row 4: bad phone
		"Dan,,,,\n" + // row 5: no phone nor email
		"Eve,+14155550122,,,maybe\n" + // row 6: bad consent
		"\n" +
		"Fay,,fay@example.com,,no\n" // row 8: new
	res, err := w.svc.Import(ctx, w.ws, []byte(csv), " Spring promo ")
	require.NoError(t, err)
	require.Equal(t, 6, res.Rows, "the blank line is not a row")
	require.Equal(t, [3]int{2, 1, 3}, [3]int{res.Created, res.Updated, res.Failed}, "created, updated, failed")
	require.Len(t, res.Errors, 3)
	require.Equal(t, contacts.RowError{Row: 4, Field: "phone", Message: res.Errors[0].Message}, res.Errors[0])
	require.Contains(t, res.Errors[0].Message, "E.164")
	require.Equal(t, 5, res.Errors[1].Row)
	require.Equal(t, 6, res.Errors[2].Row)
	require.Equal(t, "consent_sms", res.Errors[2].Field)
	require.False(t, res.Truncate)

	page, err := w.svc.List(ctx, w.ws, contacts.Filter{})
	require.NoError(t, err)
	require.Len(t, page.Data, 3, "Ada (updated), Bob and Fay; no duplicate of Ada")
	ada, err := w.svc.Get(ctx, w.ws, existing.ID)
	require.NoError(t, err)
	require.Equal(t, "Ada Lovelace", *ada.Name)
	require.Equal(t, []string{"vip", "beta"}, ada.Tags, "tags are added to")
	require.True(t, ada.ConsentSMS)
	require.Equal(t, contacts.SourceAPI, ada.Source, "an update keeps the source")
	lists, err := w.svc.Lists(ctx, w.ws)
	require.NoError(t, err)
	require.Len(t, lists.Data, 1)
	require.Equal(t, "Spring promo", lists.Data[0].Name)
	require.EqualValues(t, 3, lists.Data[0].Contacts)
	for _, c := range page.Data {
		if c.ID != existing.ID {
			require.Equal(t, contacts.SourceImport, c.Source)
		}
		if c.Name != nil && *c.Name == "Bob" {
			require.Equal(t, []string{"beta", "gold"}, c.Tags)
			require.True(t, c.ConsentSMS)
		}
	}
}

func TestImportRefusesAFileItCannotRead(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for csv, code := range map[string]string{
		"":                                    "empty_file",
		"name,fone\nAda,+14155550100\n":       "unknown_column",
		"name,phone,Phone\nAda,+1415,+1415\n": "duplicate_column",
		"name,tags\nAda,vip\n":                "missing_column",
		"name,phone\n\xff\xfe,+14155550100\n": "invalid_encoding",
	} {
		_, err := w.svc.Import(context.Background(), w.ws, []byte(csv), "")
		e := apierr.As(err)
		require.NotNil(t, e, csv)
		require.Equal(t, code, e.Code, csv)
	}
	_, err := w.svc.Import(context.Background(), w.ws, []byte("phone\n+14155550100\n"), strings.Repeat("x", contacts.MaxListLen+1))
	require.Equal(t, "list", apierr.As(err).Param)
	page, err := w.svc.List(context.Background(), w.ws, contacts.Filter{})
	require.NoError(t, err)
	require.Empty(t, page.Data, "a refused file writes nothing")
}

func TestImportTagsAndListsAndConsents(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	res, err := w.svc.Import(context.Background(), w.ws, []byte("email,tags,lists,consent_sms,consent_calls\n"+
		"a@example.com,x|y,L1;L2,TRUE,0\n"+
		"b@example.com,,,false,Yes\n"), "")
	require.NoError(t, err)
	require.Equal(t, 2, res.Created)
	page, err := w.svc.List(context.Background(), w.ws, contacts.Filter{Query: "a@example.com"})
	require.NoError(t, err)
	a := page.Data[0]
	require.Equal(t, []string{"x", "y"}, a.Tags)
	require.Len(t, a.Lists, 2)
	require.True(t, a.ConsentSMS)
	require.False(t, a.ConsentCalls)
	page, err = w.svc.List(context.Background(), w.ws, contacts.Filter{ConsentCalls: ptr(true)})
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	require.Equal(t, "b@example.com", *page.Data[0].Email)
}

// TestAnImportWaitsForABulkSoftDeleteOfTheContactsItUpdates: an import updates the contacts its
// file names in the file's order; a bulk soft delete locks its contacts in id order. The import
// locks the contacts it will update first, in id order too, so with its file against the ids'
// order the delete waits for it instead of each holding a contact the other waits for (40P01
// before: the import failed whole, or the delete's batch did).
func TestAnImportWaitsForABulkSoftDeleteOfTheContactsItUpdates(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	low := w.create(t, contacts.Input{Name: ptr("Ada"), Phone: ptr("+14155550100")})
	high := w.create(t, contacts.Input{Name: ptr("Bob"), Phone: ptr("+14155550111")})
	if bytes.Compare(low.ID[:], high.ID[:]) > 0 {
		low, high = high, low
	}
	csv := "name,phone\n" + *high.Name + " B.," + *high.Phone + "\n" + *low.Name + " B.," + *low.Phone + "\n" // against the ids' order

	release := storetest.HoldWrites(t, w.store, "contacts", "UPDATE", fmt.Sprintf("NEW.id = '%s' AND NEW.deleted_at IS NULL", high.ID)) // the import, once it has updated its first row
	imported, importErr := storetest.InBackground(func(ctx context.Context) error {
		_, err := w.svc.Import(ctx, w.ws, []byte(csv), "")
		return err
	})
	storetest.WaitBlockedOrDone(t, w.store, imported)
	var deleted int
	softDeleted, deleteErr := storetest.InBackground(func(ctx context.Context) error {
		return w.store.InTx(ctx, func(tx *store.Tx) (err error) {
			deleted, err = tx.SoftDeleteContacts(ctx, w.ws, store.BulkSet{Cutoff: time.Now().Add(time.Minute)}, 1000)
			return err
		})
	})
	storetest.WaitWaitersOrDone(t, w.store, 2, softDeleted) // the delete waits for a contact the import holds
	release()
	<-imported
	<-softDeleted
	require.NoError(t, *importErr, "the import")
	require.NoError(t, *deleteErr, "the bulk soft delete")
	require.Equal(t, 2, deleted, "both deleted, after the import")
}

// TestImportsNamingTheSameListsInTwoOrdersWaitForEachOther: an import creates (or finds) each
// list its file names, and that holds the list's row until it commits. Two imports naming the
// same two lists in crossing orders ensure them in one order (by name), so the second waits
// for the first instead of each holding a list the other waits for (40P01 before: one import
// failed whole).
func TestImportsNamingTheSameListsInTwoOrdersWaitForEachOther(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	release := storetest.HoldWrites(t, w.store, "contact_lists", "INSERT", "NEW.name = 'Xray'") // the first import, once it has created Xray
	importing := func(csv string) (<-chan struct{}, *error) {
		return storetest.InBackground(func(ctx context.Context) error {
			_, err := w.svc.Import(ctx, w.ws, []byte(csv), "")
			return err
		})
	}
	first, firstErr := importing("name,phone,lists\nAda,+14155550100,Xray;Yankee\n")
	storetest.WaitBlockedOrDone(t, w.store, first)
	second, secondErr := importing("name,phone,lists\nBob,+14155550111,Yankee;Xray\n")
	storetest.WaitWaitersOrDone(t, w.store, 2, second) // the second waits for a list the first holds
	release()
	<-first
	<-second
	require.NoError(t, *firstErr, "the first import")
	require.NoError(t, *secondErr, "the second import")

	for _, name := range []string{"Xray", "Yankee"} {
		var members int
		require.NoError(t, w.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM contact_list_members m
			JOIN contact_lists l ON l.id = m.list_id WHERE l.workspace_id = $1 AND l.name = $2`, w.ws, name).Scan(&members))
		require.Equal(t, 2, members, name)
	}
}
