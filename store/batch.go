package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"switchboard/store/internal/dbsqlc"
)

// errQueueOnly is returned when something other than an :exec query is given to a
// batchQueue: only statements whose result is not read can wait for the batch.
var errQueueOnly = errors.New("store: only :exec queries can be queued in a batch")

// batchQueue is a DBTX that queues what generated :exec queries would run instead of running
// it, so that several different statements travel in one pipelined round trip. sqlc's own
// :batchexec pipelines many runs of one statement only; Settle needs a run of different
// statements (ledger row, cursor, events, dispatch rows) behind the workspace lock, and each
// round trip there is time every other writer of the workspace waits. The SQL and the
// parameter types still come from sqlc.
type batchQueue struct {
	batch *pgx.Batch
}

func (b batchQueue) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	b.batch.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (b batchQueue) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errQueueOnly
}

func (b batchQueue) QueryRow(context.Context, string, ...any) pgx.Row { return errRow{} }

func (b batchQueue) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, errQueueOnly
}

// flagRows is a batchQueue whose statements set *flag once their results are read (at the
// batch's Close) if any of them affected a row.
type flagRows struct {
	batchQueue
	flag *bool
}

func (f flagRows) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	f.batch.Queue(sql, args...).Exec(func(ct pgconn.CommandTag) error {
		if ct.RowsAffected() > 0 {
			*f.flag = true
		}
		return nil
	})
	return pgconn.CommandTag{}, nil
}

type errRow struct{}

func (errRow) Scan(...any) error { return errQueueOnly }

// queueRow queues a generated :one query in batch and reads its row only when the batch's
// results are read: in a pipelined transaction (Store.Pipelined), with COMMIT, so that no
// round trip to this process happens between the statement and the commit. run calls the
// generated method with the DBTX it is given, twice: first to queue the statement (the row it
// gets back then is empty: run must ignore it when got is false), then, once the row has
// come, to scan it (got is true), still through the generated code.
func queueRow(batch *pgx.Batch, run func(db dbsqlc.DBTX, got bool) error) error {
	q := &rowQueue{batchQueue: batchQueue{batch}}
	if err := run(q, false); err != nil {
		return err
	}
	if q.queued == nil {
		return errors.New("store: queueRow's run queued no query")
	}
	q.queued.QueryRow(func(row pgx.Row) error { return run(gotRow{row}, true) })
	return nil
}

// rowQueue is queueRow's DBTX while queueing: it queues the one QueryRow it is given.
type rowQueue struct {
	batchQueue
	queued *pgx.QueuedQuery
}

func (q *rowQueue) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	q.queued = q.batch.Queue(sql, args...)
	return emptyRow{}
}

// emptyRow scans nothing: the row comes later (queueRow).
type emptyRow struct{}

func (emptyRow) Scan(...any) error { return nil }

// gotRow is queueRow's DBTX once the row has come: QueryRow hands it over.
type gotRow struct{ row pgx.Row }

func (g gotRow) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errQueueOnly
}
func (g gotRow) Query(context.Context, string, ...any) (pgx.Rows, error) { return nil, errQueueOnly }
func (g gotRow) QueryRow(context.Context, string, ...any) pgx.Row        { return g.row }
func (g gotRow) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, errQueueOnly
}

// queueRows is queueRow for a generated :many query: run is called with a DBTX that queues
// the statement (the rows it gets back then are none: run must ignore them when got is
// false), then, once the batch's results are read, with one that hands the statement's rows
// to the generated code to scan (got is true).
func queueRows(batch *pgx.Batch, run func(db dbsqlc.DBTX, got bool) error) error {
	q := &rowsQueue{batchQueue: batchQueue{batch}}
	if err := run(q, false); err != nil {
		return err
	}
	if q.queued == nil {
		return errors.New("store: queueRows's run queued no query")
	}
	q.queued.Query(func(rows pgx.Rows) error { return run(gotRows{rows}, true) })
	return nil
}

// rowsQueue is queueRows's DBTX while queueing: it queues the one Query it is given.
type rowsQueue struct {
	batchQueue
	queued *pgx.QueuedQuery
}

func (q *rowsQueue) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	q.queued = q.batch.Queue(sql, args...)
	return noRows{}, nil
}

// noRows is a result without rows: the rows come later (queueRows).
type noRows struct{}

func (noRows) Close()                                       {}
func (noRows) Err() error                                   { return nil }
func (noRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (noRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (noRows) Next() bool                                   { return false }
func (noRows) Scan(...any) error                            { return errQueueOnly }
func (noRows) Values() ([]any, error)                       { return nil, errQueueOnly }
func (noRows) RawValues() [][]byte                          { return nil }
func (noRows) Conn() *pgx.Conn                              { return nil }
func (noRows) TypeMap() *pgtype.Map                         { return nil }

// gotRows is queueRows's DBTX once the rows have come: Query hands them over.
type gotRows struct{ rows pgx.Rows }

func (g gotRows) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errQueueOnly
}
func (g gotRows) Query(context.Context, string, ...any) (pgx.Rows, error) { return g.rows, nil }
func (g gotRows) QueryRow(context.Context, string, ...any) pgx.Row        { return errRow{} }
func (g gotRows) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, errQueueOnly
}
