package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/apikey"
	"switchboard/store"
	"switchboard/store/storetest"
)

func TestWorkspacesAndKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)

	w, err := s.CreateWorkspace(ctx, "acme", 5_000_000_000)
	require.NoError(t, err)
	require.Equal(t, store.WorkspaceActive, w.Status)
	_, err = s.CreateWorkspace(ctx, "acme", 0)
	require.ErrorIs(t, err, store.ErrExists)

	key, sum, display := apikey.New()
	k, err := s.CreateKey(ctx, w.ID, "member", sum, display)
	require.NoError(t, err)

	p, err := s.Authenticate(ctx, sum)
	require.NoError(t, err)
	require.Equal(t, w.ID, p.WorkspaceID)
	require.Equal(t, "member", p.Role)
	require.Equal(t, int64(5_000_000_000), p.BalanceNanoUSD)

	var plaintext int
	require.NoError(t, s.Pool().QueryRow(ctx,
		`SELECT count(*) FROM api_keys WHERE encode(secret_sha256, 'escape') LIKE '%' || $1 || '%' OR display_prefix = $2`,
		key[7:], key).Scan(&plaintext))
	require.Zero(t, plaintext, "the database never holds the key itself")

	_, err = s.RevokeKey(ctx, k.ID)
	require.NoError(t, err)
	_, err = s.Authenticate(ctx, sum)
	require.ErrorIs(t, err, store.ErrNotFound)

	w, err = s.AddCredit(ctx, "acme", -1_000_000_000)
	require.NoError(t, err)
	require.Equal(t, int64(4_000_000_000), w.BalanceNanoUSD)
	w, err = s.SetWorkspaceStatus(ctx, "acme", store.WorkspaceSuspended)
	require.NoError(t, err)
	require.Equal(t, store.WorkspaceSuspended, w.Status)
	_, err = s.SetWorkspaceStatus(ctx, "nope", store.WorkspaceSuspended)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestBootstrapKeyIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	key, sum, display := apikey.New()
	_ = key
	for i := 0; i < 3; i++ {
		require.NoError(t, s.EnsureBootstrapKey(ctx, "default", 5_000_000_000, sum, display))
	}
	w, err := s.WorkspaceByName(ctx, "default")
	require.NoError(t, err)
	keys, err := s.ListKeys(ctx, w.ID)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.Equal(t, "owner", keys[0].Role)
}

// A missing row is the store's not-found, which the error table maps to a 404 naming what
// was missing, and which a row of another workspace is too.
func TestNotFoundIsA404OfWhatWasMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	mine, err := s.CreateWorkspace(ctx, "mine", 0)
	require.NoError(t, err)
	theirs, err := s.CreateWorkspace(ctx, "theirs", 0)
	require.NoError(t, err)
	conv, err := s.CreateConversation(ctx, theirs.ID, "api")
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		err  error
		code string
	}{
		{"response", second(s.ResponseByShortID(ctx, mine.ID, "resp_missing")), "response_not_found"},
		{"conversation of another workspace", second(s.ConversationByRef(ctx, mine.ID, conv.ShortID)), "conversation_not_found"},
		{"webhook endpoint", s.DeleteWebhookEndpoint(ctx, mine.ID, "whe-missing"), "webhook_endpoint_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.err, store.ErrNotFound)
			e := apierr.As(tc.err)
			require.NotNil(t, e)
			require.Equal(t, 404, e.Status())
			require.Equal(t, tc.code, e.Code)
		})
	}
}

func second[T any](_ T, err error) error { return err }
