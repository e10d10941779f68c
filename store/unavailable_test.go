package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestUnavailableTellsTheDatabaseOutOfReach: real failures of the driver, each classified.
func TestUnavailableTellsTheDatabaseOutOfReach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)

	// No server listening: a connect error.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedPort := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	_, err = pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", closedPort))
	require.Error(t, err)
	require.True(t, store.Unavailable(err), "refused: %v", err)
	require.True(t, store.Unavailable(fmt.Errorf("store: list agents: %w", err)), "wrapped")
	require.Equal(t, "database_unavailable", store.Unavailability(err).Code)

	// A connection the server ends under the statement (what a shutdown does: 57P01).
	victim, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer victim.Close(ctx)
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer admin.Close(ctx)
	pid := victim.PgConn().PID()
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, int64(pid))
	require.NoError(t, err)
	_, err = victim.Exec(ctx, `SELECT 1`)
	require.Error(t, err)
	require.True(t, store.Unavailable(err), "terminated: %v", err)
	// And the same connection used again: closed.
	_, err = victim.Exec(ctx, `SELECT 1`)
	require.Error(t, err)
	require.True(t, store.Unavailable(err), "closed: %v", err)

	// Not the database's state: a bad statement, a constraint, the caller's own cancellation,
	// another dependency's network error, and no error.
	_, err = admin.Exec(ctx, `SELEC 1`)
	require.Error(t, err)
	require.False(t, store.Unavailable(err), "syntax: %v", err)
	_, err = admin.Exec(ctx, `SELECT 1/0`)
	require.False(t, store.Unavailable(err), "division by zero: %v", err)
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = admin.Exec(canceled, `SELECT 1`)
	require.Error(t, err)
	require.False(t, store.Unavailable(err), "canceled: %v", err)
	_, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", closedPort))
	require.Error(t, err)
	require.False(t, store.Unavailable(err), "a vendor's refusal: %v", err)
	require.False(t, store.Unavailable(errors.New("conn closed")), "only the driver's own")
	require.False(t, store.Unavailable(nil))
	require.Nil(t, store.Unavailability(errors.New("boom")))
}
