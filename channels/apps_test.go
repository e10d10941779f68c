package channels

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestTwoWebhooksNamingTheSamePeopleInTwoOrdersWaitForEachOther: a messaging app's webhook
// stores a batch of messages, each with its sender's contact (found, or created and linked to
// the app's user id), in one transaction. Two webhooks on two replicas carrying messages of the
// same two new people in crossing orders each held one person's link while waiting for the
// other's (40P01: one webhook failed and the app sent it again). Each batch takes its senders
// in one order (by the app's user id), so the second waits for the first.
func TestTwoWebhooksNamingTheSamePeopleInTwoOrdersWaitForEachOther(t *testing.T) {
	ctx := context.Background()
	st, s, _, c := whatsAppChannel(t)
	message := func(id, from string) AppMessage {
		return AppMessage{ID: id, From: store.AppUser{App: "msgapp_1", ID: from, Name: from}, Kind: "text", Text: "Hello"}
	}

	release := storetest.HoldWrites(t, st, "contact_app_ids", "INSERT", "NEW.app_user_id = 'p-1001'") // the first webhook, once it has linked p-1001
	first, firstErr := storetest.InBackground(func(ctx context.Context) error {
		return s.ReceiveApp(ctx, c, []AppMessage{message("wamid-1", "p-1001"), message("wamid-2", "p-1002")})
	})
	storetest.WaitBlockedOrDone(t, st, first)
	second, secondErr := storetest.InBackground(func(ctx context.Context) error {
		return s.ReceiveApp(ctx, c, []AppMessage{message("wamid-3", "p-1002"), message("wamid-4", "p-1001")})
	})
	storetest.WaitWaitersOrDone(t, st, 2, second) // the second waits for a person the first holds
	release()
	<-first
	<-second
	require.NoError(t, *firstErr, "the first webhook")
	require.NoError(t, *secondErr, "the second webhook")

	var stored int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM channel_messages WHERE channel_id = $1 AND direction = 'inbound'`, c.ID).Scan(&stored))
	require.Equal(t, 4, stored, "every message stored once")
}

// TestTwoWebhooksOfANewPersonAtOnceMakeOneContact: a new person's two messages come in two
// webhooks at once (two replicas). Each finds no contact for the app's user id and creates
// one; the second's tie of the id waits for the first's, then keeps it and drops the contact
// it created, so both messages belong to one contact (before, the second tie won, and the
// first message's conversation kept a contact no later message would find).
func TestTwoWebhooksOfANewPersonAtOnceMakeOneContact(t *testing.T) {
	ctx := context.Background()
	st, s, w, c := whatsAppChannel(t)
	ann := store.AppUser{App: "msgapp_1", ID: "p-2001", Name: "Ann"}

	release := storetest.HoldWrites(t, st, "contact_app_ids", "INSERT", "") // the first webhook, once it has tied Ann's id
	first, firstErr := storetest.InBackground(func(ctx context.Context) error {
		return s.ReceiveApp(ctx, c, []AppMessage{{ID: "wamid-11", From: ann, Kind: "text", Text: "Hi"}})
	})
	storetest.WaitBlockedOrDone(t, st, first)
	second, secondErr := storetest.InBackground(func(ctx context.Context) error {
		return s.ReceiveApp(ctx, c, []AppMessage{{ID: "wamid-12", From: ann, Kind: "text", Text: "I need help"}})
	})
	storetest.WaitWaitersOrDone(t, st, 2, second) // the second's tie waits for the first's
	release()
	<-first
	<-second
	require.NoError(t, *firstErr, "the first webhook")
	require.NoError(t, *secondErr, "the second webhook")

	var contacts int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM contacts WHERE workspace_id = $1`, w.ID).Scan(&contacts))
	require.Equal(t, 1, contacts, "one person, one contact")
	id, err := st.ContactForAppUser(ctx, w.ID, ann)
	require.NoError(t, err)
	var linked uuid.UUID
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT id FROM contacts WHERE workspace_id = $1`, w.ID).Scan(&linked))
	require.Equal(t, linked, id)
}

// whatsAppChannel is a channel service over a fresh database (its reply jobs inserted, not
// worked) and a connected msgapp_1 channel of a new workspace.
func whatsAppChannel(t *testing.T) (*store.Store, *Service, store.Workspace, store.Channel) {
	t.Helper()
	ctx := context.Background()
	st := storetest.New(t)
	jobs, err := river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{})
	require.NoError(t, err)
	s := New(st, nil, nil, jobs, "http://switchboard.test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	w, err := st.CreateWorkspace(ctx, "whatsapp", 1_000_000_000)
	require.NoError(t, err)
	c, err := st.CreateChannel(ctx, w.ID, store.ChannelWrite{ID: store.NewChannelID(), Provider: "msgapp_1", Name: "WhatsApp",
		Config: json.RawMessage(`{}`), Status: "connected", InboundToken: "tok-whatsapp"})
	require.NoError(t, err)
	return st, s, w, c
}
