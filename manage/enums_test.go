package manage_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/blueprint"
	"switchboard/manage"
	"switchboard/store/storetest"
)

// The migrations cannot import Go, so this test holds each CHECK constraint that lists an
// enumeration equal to the Go list, on a migrated database.
func TestDatabaseChecksEqualTheGoLists(t *testing.T) {
	t.Parallel()
	pool := storetest.New(t).Pool()
	cases := []struct {
		table, column string
		want          []string
	}{
		{"agents", "status", blueprint.Strings(manage.AgentStatuses())},
		{"knowledge_sources", "status", manage.SourceStatuses()},
		{"channels", "provider", blueprint.Strings(blueprint.ChannelTypes())},
		{"recordings", "kind", manage.RecordingKinds()},
	}
	quoted := regexp.MustCompile(`'([^']*)'::text`)
	for _, c := range cases {
		var def string
		err := pool.QueryRow(context.Background(), `
			SELECT pg_get_constraintdef(con.oid)
			  FROM pg_constraint con
			  JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = ANY (con.conkey)
			 WHERE con.conrelid = $1::regclass AND att.attname = $2 AND con.contype = 'c'`, c.table, c.column).Scan(&def)
		require.NoError(t, err, "the CHECK constraint of %s.%s", c.table, c.column)
		var got []string
		for _, m := range quoted.FindAllStringSubmatch(def, -1) {
			got = append(got, m[1])
		}
		require.Equal(t, c.want, got, "%s.%s: %s", c.table, c.column, def)
	}
}
