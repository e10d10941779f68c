package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestUUIDsReadBackAsWritten: over a pool of store.PoolConfig, uuid values, arrays, COPY
// fields and NULLs read back as they were written.
func TestUUIDsReadBackAsWritten(t *testing.T) {
	t.Parallel()
	cfg, err := store.PoolConfig(storetest.NewEmptyURL(t))
	require.NoError(t, err)
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer pool.Close()

	a, b := uuid.New(), uuid.New()
	var got uuid.UUID
	var text string
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::uuid, $1::uuid::text", a).Scan(&got, &text))
	require.Equal(t, a, got)
	require.Equal(t, a.String(), text)

	var arr []uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::uuid[]", []uuid.UUID{a, b, uuid.Nil}).Scan(&arr))
	require.Equal(t, []uuid.UUID{a, b, uuid.Nil}, arr)

	got = a
	require.NoError(t, pool.QueryRow(ctx, "SELECT NULL::uuid").Scan(&got))
	require.Equal(t, uuid.Nil, got, "NULL reads as the zero UUID")
	var ptr *uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, "SELECT NULL::uuid").Scan(&ptr))
	require.Nil(t, ptr)
	require.NoError(t, pool.QueryRow(ctx, "SELECT $1::uuid", b).Scan(&ptr))
	require.Equal(t, b, *ptr)

	_, err = pool.Exec(ctx, "CREATE TABLE ids (id uuid PRIMARY KEY, other uuid)")
	require.NoError(t, err)
	n, err := pool.CopyFrom(ctx, pgx.Identifier{"ids"}, []string{"id", "other"}, pgx.CopyFromRows([][]any{{a, b}, {b, nil}}))
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	var other uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, "SELECT other FROM ids WHERE id = $1", a).Scan(&other))
	require.Equal(t, b, other)
}
