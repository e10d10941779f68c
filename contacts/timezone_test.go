package contacts_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/contacts"
)

// TestTimezoneIsAnIANANameOnEveryPath: create, update (null clears), get, list and CSV import
// keep a contact's timezone; a name that is not an IANA zone is refused naming the field,
// and nothing is written.
func TestTimezoneIsAnIANANameOnEveryPath(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	ada := w.create(t, contacts.Input{Phone: ptr("+14155550100"), Timezone: ptr(" America/Chicago ")})
	require.Equal(t, "America/Chicago", *ada.Timezone)
	bob := w.create(t, contacts.Input{Phone: ptr("+14155550101")})
	require.Nil(t, bob.Timezone)
	for _, bad := range []string{"Mars/Olympus", "Local", "america/chicago"} {
		_, err := w.svc.Create(ctx, w.ws, contacts.Input{Phone: ptr("+14155550102"), Timezone: ptr(bad)})
		invalid(t, err, apierr.KindInvalid, "timezone", "invalid_value")
		_, err = w.svc.Update(ctx, w.ws, ada.ID, json.RawMessage(`{"timezone":"`+bad+`"}`))
		invalid(t, err, apierr.KindInvalid, "timezone", "invalid_value")
	}
	got, err := w.svc.Get(ctx, w.ws, ada.ID)
	require.NoError(t, err)
	require.Equal(t, "America/Chicago", *got.Timezone, "a refused update wrote nothing")
	page, err := w.svc.List(ctx, w.ws, contacts.Filter{})
	require.NoError(t, err)
	require.Len(t, page.Data, 2)

	got, err = w.svc.Update(ctx, w.ws, ada.ID, json.RawMessage(`{"timezone":"Europe/Berlin"}`))
	require.NoError(t, err)
	require.Equal(t, "Europe/Berlin", *got.Timezone)
	got, err = w.svc.Update(ctx, w.ws, ada.ID, json.RawMessage(`{"name":"Ada"}`))
	require.NoError(t, err)
	require.Equal(t, "Europe/Berlin", *got.Timezone, "another field's update keeps it")
	got, err = w.svc.Update(ctx, w.ws, ada.ID, json.RawMessage(`{"timezone":null}`))
	require.NoError(t, err)
	require.Nil(t, got.Timezone)

	// CSV: a timezone column; empty keeps what a matched contact had; a bad one is a row error.
	_, err = w.svc.Update(ctx, w.ws, bob.ID, json.RawMessage(`{"timezone":"Asia/Tokyo"}`))
	require.NoError(t, err)
	res, err := w.svc.Import(ctx, w.ws, []byte("phone,timezone\n+14155550100,Europe/Paris\n+14155550101,\n+14155550103,Nowhere/Else\n"), "")
	require.NoError(t, err)
	require.Equal(t, 0, res.Created)
	require.Equal(t, 2, res.Updated)
	require.Len(t, res.Errors, 1)
	require.Equal(t, 4, res.Errors[0].Row)
	require.Equal(t, "timezone", res.Errors[0].Field)
	got, err = w.svc.Get(ctx, w.ws, ada.ID)
	require.NoError(t, err)
	require.Equal(t, "Europe/Paris", *got.Timezone)
	got, err = w.svc.Get(ctx, w.ws, bob.ID)
	require.NoError(t, err)
	require.Equal(t, "Asia/Tokyo", *got.Timezone)
}
