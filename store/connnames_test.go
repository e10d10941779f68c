package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestConnectionsAreNamed: pg_stat_activity tells the server's connections apart by
// application_name: the main pool's, each pool of its own, the replica lock's; a name given
// in DATABASE_URL is kept and the others add to it.
func TestConnectionsAreNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	nameOf := func(s *store.Store) string {
		var name string
		require.NoError(t, s.Pool().QueryRow(ctx, `SHOW application_name`).Scan(&name))
		return name
	}
	names := func(s *store.Store) map[string]int {
		rows, err := s.Pool().Query(ctx, `SELECT application_name, count(*)::int FROM pg_stat_activity
			WHERE datname = current_database() AND backend_type = 'client backend' GROUP BY 1`)
		require.NoError(t, err)
		got := map[string]int{}
		for rows.Next() {
			var name string
			var n int
			require.NoError(t, rows.Scan(&name, &n))
			got[name] = n
		}
		require.NoError(t, rows.Err())
		return got
	}
	for _, c := range []struct{ url, want string }{
		{url, store.AppName},
		{url + "&application_name=acme-eu", "acme-eu"},
	} {
		s, err := store.Open(ctx, c.url)
		require.NoError(t, err)
		defer s.Close()
		require.Equal(t, c.want, nameOf(s))
		hooks, err := s.WithOwnPool(ctx, 2, "hooks")
		require.NoError(t, err)
		defer hooks.Close()
		require.Equal(t, c.want+" hooks", nameOf(hooks))
		require.Equal(t, c.want+" events", s.ConnName("events"))
		lock, err := s.HoldReplicaLock(ctx, "replica-"+c.want)
		require.NoError(t, err)
		require.Equal(t, 1, names(s)[c.want+" replica lock"], "the lock's connection, named")
		lock.Release(ctx)
	}
}
