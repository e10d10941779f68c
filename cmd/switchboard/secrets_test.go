package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/secrets"
	"switchboard/shortid"
	"switchboard/store"
)

func newSecretsKey(t *testing.T) (secrets.Key, string) {
	t.Helper()
	k, encoded, err := secrets.GenerateKey()
	require.NoError(t, err)
	return k, encoded
}

// endpoints creates n webhook endpoints in the CLI's database, their secrets sealed with key.
func (c *cli) endpoints(t *testing.T, key secrets.Key, n int) []store.WebhookEndpoint {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, c.env["DATABASE_URL"])
	require.NoError(t, err)
	defer st.Close()
	st = st.WithSecrets(secrets.NewKeyring(key))
	ws, err := st.WorkspaceByName(ctx, "acme")
	if err != nil {
		ws, err = st.CreateWorkspace(ctx, "acme", 0)
		require.NoError(t, err)
	}
	var out []store.WebhookEndpoint
	for range n {
		_, secret := newSecretsKey(t)
		e, err := st.CreateWebhookEndpoint(ctx, store.WebhookEndpoint{WorkspaceID: ws.ID, ShortID: shortid.New(shortid.Webhook),
			URL: "https://hooks.example.com/x", EventTypes: []string{"*"}, Secret: "whsec_" + secret})
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

func (c *cli) keyIDOf(t *testing.T, id uuid.UUID) string {
	t.Helper()
	st, err := store.Open(context.Background(), c.env["DATABASE_URL"])
	require.NoError(t, err)
	defer st.Close()
	var keyID string
	require.NoError(t, st.Pool().QueryRow(context.Background(), `SELECT secret_key_id FROM webhook_endpoints WHERE id = $1`, id).Scan(&keyID))
	return keyID
}

// TestSecretsRotate: with the new key as SECRETS_KEY and the old one as
// SECRETS_KEY_PREVIOUS, `secrets rotate` seals every secret with the new key; a key that
// opens nothing is refused clearly.
func TestSecretsRotate(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.must("migrate")
	oldKey, oldEncoded := newSecretsKey(t)
	newKey, newEncoded := newSecretsKey(t)
	eps := c.endpoints(t, oldKey, 2)

	_, _, err := c.run("secrets", "rotate")
	require.ErrorContains(t, err, "SECRETS_KEY is not set")
	_, _, err = c.run("secrets", "spin")
	require.ErrorAs(t, err, &usageError{})

	c.env["SECRETS_KEY"], c.env["SECRETS_KEY_PREVIOUS"] = newEncoded, oldEncoded
	require.Contains(t, c.must("secrets", "rotate"), "resealed 2 secret(s) with key id "+newKey.ID())
	for _, e := range eps {
		require.Equal(t, newKey.ID(), c.keyIDOf(t, e.ID))
	}
	require.Contains(t, c.must("secrets", "rotate"), "resealed 0 secret(s)", "running it again is harmless")

	_, other := newSecretsKey(t)
	c.env["SECRETS_KEY"], c.env["SECRETS_KEY_PREVIOUS"] = other, ""
	_, _, err = c.run("secrets", "rotate")
	require.ErrorContains(t, err, newKey.ID()+" (2)", "the secrets no configured key opens are named")
}

// serveUntil runs `serve` in-process until it returns or the test's patience ends.
func (c *cli) serveUntil(t *testing.T) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.env["ADDR"] = "127.0.0.1:0"
	err := run(ctx, []string{"serve"}, c.getenv, io.Discard, io.Discard)
	require.NoError(t, ctx.Err(), "serve started (and ran until the test gave up) instead of refusing")
	return err
}

// TestProductionRefusesToStartWithoutTheSecretsKey: with webhook endpoints in the database,
// production does not start without SECRETS_KEY, nor with a key that opens none of their
// secrets; the error names SECRETS_KEY.
func TestProductionRefusesToStartWithoutTheSecretsKey(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.must("migrate")
	key, _ := newSecretsKey(t)
	c.endpoints(t, key, 1)
	c.env["APP_ENV"] = "production"

	err := c.serveUntil(t)
	require.ErrorContains(t, err, "SECRETS_KEY is not set, and 1 webhook endpoint(s) exist")

	_, wrong := newSecretsKey(t)
	c.env["SECRETS_KEY"] = wrong
	err = c.serveUntil(t)
	require.ErrorContains(t, err, "neither SECRETS_KEY")
	require.ErrorContains(t, err, key.ID())
}

func TestSecretsKeyConfiguration(t *testing.T) {
	t.Parallel()
	_, encoded := newSecretsKey(t)
	c, err := loadConfig(envOf(map[string]string{"SECRETS_KEY": encoded}))
	require.NoError(t, err)
	require.NotNil(t, c.Secrets)
	require.Empty(t, c.ThrowawaySecretsKey)

	c, err = loadConfig(envOf(nil))
	require.NoError(t, err)
	require.Nil(t, c.Secrets, "production makes up no key")

	c, err = loadConfig(envOf(map[string]string{"APP_ENV": "development"}))
	require.NoError(t, err)
	require.NotEmpty(t, c.ThrowawaySecretsKey, "development makes a throwaway key")
	k, err := secrets.ParseKey("SECRETS_KEY", c.ThrowawaySecretsKey)
	require.NoError(t, err)
	require.Equal(t, k.ID(), c.Secrets.CurrentID())

	for env, want := range map[string]map[string]string{
		"SECRETS_KEY":            {"SECRETS_KEY": "c2hvcnQ="},
		"SECRETS_KEY_PREVIOUS":   {"SECRETS_KEY": encoded, "SECRETS_KEY_PREVIOUS": "nope"},
		"but SECRETS_KEY is not": {"SECRETS_KEY_PREVIOUS": encoded},
	} {
		_, err := loadConfig(envOf(want))
		require.ErrorContains(t, err, env)
	}
}
