package store_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/secrets"
	"switchboard/shortid"
	"switchboard/store"
	"switchboard/store/storetest"
)

type secretsBundle struct {
	store *store.Store // seals with key
	key   secrets.Key
	ws    uuid.UUID
}

func setupSecrets(t *testing.T) *secretsBundle {
	t.Helper()
	key, _, err := secrets.GenerateKey()
	require.NoError(t, err)
	st := storetest.New(t).WithSecrets(secrets.NewKeyring(key))
	w, err := st.CreateWorkspace(context.Background(), "acme", 0)
	require.NoError(t, err)
	return &secretsBundle{store: st, key: key, ws: w.ID}
}

func newSecret(t *testing.T) string {
	t.Helper()
	_, encoded, err := secrets.GenerateKey() // 32 random bytes, as events.NewSecret makes them
	require.NoError(t, err)
	return "whsec_" + encoded
}

func (b *secretsBundle) create(t *testing.T, st *store.Store) store.WebhookEndpoint {
	t.Helper()
	e, err := st.CreateWebhookEndpoint(context.Background(), store.WebhookEndpoint{WorkspaceID: b.ws,
		ShortID: shortid.New(shortid.Webhook), URL: "https://hooks.example.com/x", EventTypes: []string{"*"}, Secret: newSecret(t)})
	require.NoError(t, err)
	return e
}

// raw is what a dump of the row holds.
type raw struct {
	plaintext  *string
	ciphertext []byte
	keyID      *string
}

func (b *secretsBundle) raw(t *testing.T, id uuid.UUID) raw {
	t.Helper()
	var r raw
	require.NoError(t, b.store.Pool().QueryRow(context.Background(),
		`SELECT secret, secret_ciphertext, secret_key_id FROM webhook_endpoints WHERE id = $1`, id).
		Scan(&r.plaintext, &r.ciphertext, &r.keyID))
	return r
}

func requireSealed(t *testing.T, r raw, secret, keyID string) {
	t.Helper()
	require.Nil(t, r.plaintext)
	require.NotEmpty(t, r.ciphertext)
	require.Equal(t, keyID, *r.keyID)
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	for _, leak := range [][]byte{[]byte(secret), []byte(strings.TrimPrefix(secret, "whsec_")), key} {
		require.NotContains(t, string(r.ciphertext), string(leak), "the column never holds the secret")
	}
}

// TestWebhookSecretsAreSealedAtRest: the row holds ciphertext and a key id, never the
// secret; the store opens it on read.
func TestWebhookSecretsAreSealedAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSecrets(t)
	e := b.create(t, b.store)
	requireSealed(t, b.raw(t, e.ID), e.Secret, b.store.Secrets().CurrentID())

	got, err := b.store.WebhookEndpointByRef(ctx, b.ws, e.ShortID)
	require.NoError(t, err)
	require.Equal(t, e.Secret, got.Secret)
	list, err := b.store.ListWebhookEndpoints(ctx, b.ws, 10)
	require.NoError(t, err)
	require.Equal(t, e.Secret, list[0].Secret)

	var dump int
	require.NoError(t, b.store.Pool().QueryRow(ctx,
		`SELECT count(*) FROM webhook_endpoints w WHERE position($1::bytea IN convert_to(w::text, 'UTF8')) > 0`, e.Secret).Scan(&dump))
	require.Zero(t, dump, "no column of the row holds the secret")

	_, err = b.store.WithSecrets(nil).CreateWebhookEndpoint(ctx, store.WebhookEndpoint{WorkspaceID: b.ws,
		ShortID: shortid.New(shortid.Webhook), URL: "https://hooks.example.com/x", EventTypes: []string{"*"}, Secret: newSecret(t)})
	require.ErrorIs(t, err, store.ErrNoSecretsKey, "nothing is stored in plaintext without a key")
}

// TestASealedSecretOnlyOpensInItsRow: a ciphertext copied into another endpoint (by someone
// who can write the database) does not open there.
func TestASealedSecretOnlyOpensInItsRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSecrets(t)
	one, two := b.create(t, b.store), b.create(t, b.store)
	_, err := b.store.Pool().Exec(ctx, `UPDATE webhook_endpoints SET secret_ciphertext = (SELECT secret_ciphertext FROM webhook_endpoints WHERE id = $1) WHERE id = $2`, one.ID, two.ID)
	require.NoError(t, err)
	_, err = b.store.WebhookEndpointByRef(ctx, b.ws, two.ShortID)
	require.ErrorIs(t, err, secrets.ErrTampered)
}

// TestPlaintextSecretsOfOldEndpointsAreSealed: an endpoint stored before secrets were sealed
// (plaintext column) still works, and SealSecrets (run by serve at start) seals it.
func TestPlaintextSecretsOfOldEndpointsAreSealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSecrets(t)
	secret := newSecret(t)
	var id uuid.UUID
	require.NoError(t, b.store.Pool().QueryRow(ctx, `INSERT INTO webhook_endpoints (workspace_id, short_id, url, event_types, secret)
		VALUES ($1, $2, 'https://hooks.example.com/old', '{*}', $3) RETURNING id`, b.ws, shortid.New(shortid.Webhook), secret).Scan(&id))
	old, err := b.store.WebhookEndpointByRef(ctx, b.ws, id.String())
	require.NoError(t, err)
	require.Equal(t, secret, old.Secret, "readable before it is sealed")

	report, err := b.store.SealSecrets(ctx, false)
	require.NoError(t, err)
	require.Equal(t, store.SealReport{Sealed: 1, Remaining: map[string]int{}}, report)
	requireSealed(t, b.raw(t, id), secret, b.store.Secrets().CurrentID())
	sealed, err := b.store.WebhookEndpointByRef(ctx, b.ws, id.String())
	require.NoError(t, err)
	require.Equal(t, secret, sealed.Secret)
}

// TestRotationSealsEverySecretWithTheNewKey: with the new key current and the old one
// previous, rotation reseals every secret; then the old key is no longer needed, and a
// keyring without the right key fails clearly.
func TestRotationSealsEverySecretWithTheNewKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSecrets(t)
	var eps []store.WebhookEndpoint
	for range 3 {
		eps = append(eps, b.create(t, b.store))
	}
	newKey, _, err := secrets.GenerateKey()
	require.NoError(t, err)
	// SECRETS_KEY is the new key, SECRETS_KEY_PREVIOUS the bundle's.
	rotating := b.store.WithSecrets(secrets.NewKeyring(newKey, b.key))

	report, err := rotating.SealSecrets(ctx, false)
	require.NoError(t, err)
	require.Equal(t, 0, report.Rotated, "without rotate, sealed secrets are left as they are")
	report, err = rotating.SealSecrets(ctx, true)
	require.NoError(t, err)
	require.Equal(t, store.SealReport{Rotated: 3, Remaining: map[string]int{}}, report)

	after := b.store.WithSecrets(secrets.NewKeyring(newKey))
	for _, e := range eps {
		requireSealed(t, b.raw(t, e.ID), e.Secret, newKey.ID())
		got, err := after.WebhookEndpointByRef(ctx, b.ws, e.ShortID)
		require.NoError(t, err)
		require.Equal(t, e.Secret, got.Secret, "the new key alone opens every secret")
	}

	_, err = b.store.WebhookEndpointByRef(ctx, b.ws, eps[0].ShortID)
	require.ErrorIs(t, err, secrets.ErrUnknownKey, "the old key alone no longer opens them")
	require.Contains(t, err.Error(), "SECRETS_KEY")
	report, err = b.store.SealSecrets(ctx, true)
	require.NoError(t, err)
	require.Equal(t, map[string]int{newKey.ID(): 3}, report.Remaining, "secrets no configured key opens are counted")
}

// TestRotationResealsChannelCredentials: `switchboard secrets rotate` reseals the channels'
// credentials with the new key too, bound to their channel.
func TestRotationResealsChannelCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSecrets(t)
	id := store.NewChannelID()
	sealed, err := secrets.NewKeyring(b.key).Seal([]byte(`{"access_token":"tok"}`), store.ChannelSecretsBinding(id))
	require.NoError(t, err)
	_, err = b.store.CreateChannel(ctx, b.ws, store.ChannelWrite{ID: id, Provider: "msgapp_1", Name: "App", Config: []byte(`{}`),
		Status: store.ChannelNeedsSetup, InboundToken: "t-" + id.String(), Secrets: &sealed})
	require.NoError(t, err)
	newKey, _, err := secrets.GenerateKey()
	require.NoError(t, err)
	report, err := b.store.WithSecrets(secrets.NewKeyring(newKey, b.key)).SealSecrets(ctx, true)
	require.NoError(t, err)
	require.Equal(t, 1, report.Rotated)

	c, err := b.store.ChannelByID(ctx, b.ws, id)
	require.NoError(t, err)
	require.Equal(t, newKey.ID(), c.Secrets.KeyID)
	plain, err := secrets.NewKeyring(newKey).Open(*c.Secrets, store.ChannelSecretsBinding(id))
	require.NoError(t, err, "the new key alone opens them")
	require.JSONEq(t, `{"access_token":"tok"}`, string(plain))
	_, err = secrets.NewKeyring(newKey).Open(*c.Secrets, store.ChannelSecretsBinding(store.NewChannelID()))
	require.Error(t, err, "bound to their channel")
}
