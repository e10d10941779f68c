package store_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"switchboard/store/storetest"
)

// fullScans are the statements allowed to read a table whole: sweeps over tables kept
// small by design, and operators' commands.
var fullScans = map[string]bool{
	// Rows live for milliseconds (migration 0036); the join to channel_messages is the generic
	// plan's choice on empty tables, by id to the few rows taken.
	"TakeStaleInbox channel_inbox":    true,
	"TakeStaleInbox channel_messages": true,
	// Codes live for minutes.
	"DeleteExpiredOAuthCodes oauth_codes": true,
	// The endpoints of at most @max claimed events, joined by workspace: a hash join is the
	// generic plan's choice on empty tables.
	"ClaimUndispatched webhook_endpoints": true,
	// The daily retention job, once a run: which workspaces have a period, theirs or an
	// agent's (the batches then read each one's conversations by its activity index).
	"RetentionWorkspaces agents": true,
	// `switchboard secrets`: an operator's command over every endpoint and channel.
	"WebhookSecretKeys webhook_endpoints":    true,
	"WebhookSecretsToSeal webhook_endpoints": true,
	"ChannelSecretsToReseal channels":        true,
}

// TestEveryQueryFindsItsRowsByAnIndex: every statement of store/queries finds its rows through
// an index condition, so its cost follows the rows it reads, not the size of its tables
// (which, on a shared platform, is every workspace's data). Each statement is prepared and
// its generic plan explained with sequential scans disabled: a Seq Scan left in the plan, or
// an index scan with no condition (the whole index read in order), means no index serves
// it. Empty tables make the planner's other choices arbitrary; this finds the scans it has no
// alternative to, like those of the foreign keys without an index (migrations 0041-0042).
// Statements written by hand in store/*.go are not covered.
func TestEveryQueryFindsItsRowsByAnIndex(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	conn, err := s.Pool().Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SET enable_seqscan = off; SET plan_cache_mode = force_generic_plan`)
	require.NoError(t, err)

	files, err := filepath.Glob("internal/dbsqlc/*.sql.go")
	require.NoError(t, err)
	statement := regexp.MustCompile("(?s)const \\w+ = `-- name: (\\w+) :(\\w+)\n(.*?)`")
	partial := map[string]bool{}
	rows, err := conn.Query(ctx, `SELECT indexrelid::regclass::text FROM pg_index WHERE indpred IS NOT NULL`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		partial[name] = true
	}
	require.NoError(t, rows.Err())
	var found, explained []string
	for _, f := range files {
		text, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range statement.FindAllStringSubmatch(string(text), -1) {
			name, kind, sql := m[1], m[2], m[3]
			if kind == "copyfrom" { // COPY has no plan
				continue
			}
			explained = append(explained, name)
			for _, table := range scannedWhole(ctx, t, conn, partial, name, sql) {
				if !fullScans[name+" "+table] {
					found = append(found, name+" reads "+table+" whole")
				}
			}
		}
	}
	require.Greater(t, len(explained), 300, "the statements were found")
	slices.Sort(found)
	require.Empty(t, found, "statements no index serves")
}

// scannedWhole explains a statement's generic plan (every parameter NULL, which a generic
// plan does not look at) and returns the tables it reads with no index condition.
func scannedWhole(ctx context.Context, t *testing.T, conn *pgxpool.Conn, partial map[string]bool, name, sql string) []string {
	t.Helper()
	// Simple protocol: the statements are PREPARE's own, not the driver's.
	simple := pgx.QueryExecModeSimpleProtocol
	_, err := conn.Exec(ctx, `PREPARE p AS `+sql, simple)
	require.NoError(t, err, name)
	defer func() { _, err := conn.Exec(ctx, `DEALLOCATE p`, simple); require.NoError(t, err) }()
	var params int
	require.NoError(t, conn.QueryRow(ctx, `SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'p'`, simple).Scan(&params))
	explain := `EXPLAIN (FORMAT JSON) EXECUTE p`
	if params > 0 {
		explain += `(` + strings.TrimSuffix(strings.Repeat(`NULL, `, params), `, `) + `)`
	}
	var plan []struct{ Plan planNode }
	require.NoError(t, conn.QueryRow(ctx, explain, simple).Scan(&plan), name)
	var tables []string
	plan[0].Plan.walk(false, func(n planNode, limited bool) {
		// An index read whole to filter its rows, with no limit to stop it: no index serves
		// the filter. (One read in order under a Limit stops early; one read whole feeding a
		// join is the empty tables' arbitrary choice.)
		wholeIndex := (n.NodeType == "Index Scan" || n.NodeType == "Index Only Scan") &&
			n.IndexCond == "" && n.Filter != "" && !partial[n.Index] && !limited
		if (n.NodeType == "Seq Scan" || wholeIndex) && !slices.Contains(tables, n.Relation) {
			tables = append(tables, n.Relation)
		}
	})
	return tables
}

// planNode is what the test reads of a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	Index     string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Filter    string     `json:"Filter"`
	Plans     []planNode `json:"Plans"`
}

func (n planNode) walk(limited bool, visit func(n planNode, limited bool)) {
	limited = limited || n.NodeType == "Limit"
	visit(n, limited)
	for _, child := range n.Plans {
		child.walk(limited, visit)
	}
}
