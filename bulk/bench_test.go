//go:build bulkbench

package bulk_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"switchboard/agent"
	"switchboard/bulk"
)

// TestMeasureDelete100k measures the 100,000-row delete of docs/benchmarks.md: 100,000
// conversations of two messages each, deleted by one delete_conversations run in batches of
// the default size. Not a unit test (no timing is asserted); run it with `make bench-bulk`.
func TestMeasureDelete100k(t *testing.T) {
	b := setup(t)
	const rows = 100_000
	seed(t, b.st, b.ws, rows, "sms")
	o := b.op(t, "delete_conversations")
	args := json.RawMessage(`{"filter":{"channel":"sms"},"parked":{"count":100000}}`)
	began := time.Now()
	out, err := o.RunCall(context.Background(), agent.Call{WorkspaceID: b.ws, Arguments: args})
	elapsed := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	res := out.(bulk.Result)
	var batches, longest int
	if err := b.st.Pool().QueryRow(context.Background(), `SELECT batches, longest_batch_ms FROM bulk_runs WHERE workspace_id = $1`, b.ws).Scan(&batches, &longest); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted %d of %d conversations (and their %d messages) in %s: %d batches of at most %d rows, longest batch transaction %d ms, %.0f rows/s",
		res.Affected, rows, 2*rows, elapsed.Round(time.Millisecond), batches, bulk.DefaultBatchSize, longest, float64(res.Affected)/elapsed.Seconds())
	if res.Affected != rows {
		t.Fatalf("affected %d, want %d", res.Affected, rows)
	}
}
