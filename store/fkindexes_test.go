package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/store/storetest"
)

// TestEveryForeignKeyHasAnIndex: every foreign key's columns lead an index of their table
// (migrations 0041 and 0042). Without one, each deleted or re-keyed parent row scans the
// whole child table to find its children, and a read joining a parent to its children scans
// them too: the cost grows with the platform, not with the workspace. An index whose leading
// columns are the key's in any order serves both.
//
// The workspace columns are checked by triggers, not foreign keys (migrations 0019, 0020,
// 0035), and each table's workspace index leads with them. The job queue's tables are River's.
func TestEveryForeignKeyHasAnIndex(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	rows, err := s.Pool().Query(ctx, `
		SELECT c.conrelid::regclass::text, c.conname
		FROM pg_constraint c
		WHERE c.contype = 'f'
		  AND c.connamespace = 'public'::regnamespace
		  AND c.conrelid::regclass::text NOT LIKE 'river\_%'
		  AND NOT EXISTS (
		      SELECT 1 FROM pg_index i
		      WHERE i.indrelid = c.conrelid
		        AND i.indisvalid
		        AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] @> c.conkey
		        AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] <@ c.conkey)
		ORDER BY 1, 2`)
	require.NoError(t, err)
	defer rows.Close()
	var missing []string
	for rows.Next() {
		var table, name string
		require.NoError(t, rows.Scan(&table, &name))
		missing = append(missing, table+": "+name)
	}
	require.NoError(t, rows.Err())
	require.Empty(t, missing, "foreign keys with no index leading with their columns")
}
