package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// affectsRows is a batchQueue whose statements fail as not found (what names the missing
// thing) when their results are read and they affected no row.
type affectsRows struct {
	batchQueue
	what string
}

func (a affectsRows) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	a.batch.Queue(sql, args...).Exec(func(ct pgconn.CommandTag) error {
		if ct.RowsAffected() == 0 {
			return &NotFoundError{What: a.what}
		}
		return nil
	})
	return pgconn.CommandTag{}, nil
}
