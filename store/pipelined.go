package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pipelined runs fn in a transaction whose statements travel to PostgreSQL in as few round
// trips as their results allow: the group commit's. Under load a round trip costs far more
// than the statement (the server's goroutines and PostgreSQL's backends wait their turn for
// the CPU at each end), and a batch of stored turns made nine of them; the last three while
// holding its workspace rows, which every other batch of the workspace waits for.
//
//   - BEGIN travels with the transaction's first statements.
//   - A pipelined batch (the Tx methods that SendBatch: turns, records, settlements) is not
//     sent at once: it waits for the next statement whose result is read (a row, a count)
//     and travels with it. Its errors are that statement's.
//   - COMMIT travels with whatever still waits.
//
// A batch of new turns thus costs one round trip: its writes and its settlement (the
// workspace's lock, charge, ledger rows and events: Tx.SettleMany) travel with COMMIT. A
// statement that travels with COMMIT must fail in the database for the transaction to roll
// back (raise_not_found, migration 0022): a check made here of its result would come after
// the commit. The transaction takes no savepoints (nothing the group commit runs needs one)
// and cannot be handed to the job queue (Pgx).
//
// Revocations (a charge that stopped its workspace) are announced before Pipelined returns,
// so that no request following an answer is served from this process's cached state. The
// rest of what InTx announces after its commit (event notices, the relays' wake-up,
// idempotency keys) is announce's: the caller runs it once it has answered whoever waits on
// the commit, so that the announcements' round trip is not theirs. It is nil after an error.
func (s *Store) Pipelined(ctx context.Context, fn func(*Tx) error) (announce func(), err error) {
	if s.txObserver != nil {
		var done func(error)
		ctx, done = s.txObserver(ctx)
		defer func() { done(err) }()
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release() // a connection left inside a transaction is closed, not reused
	p := &pipe{conn: c}
	p.pending.Queue("begin")
	t := &Tx{queries: queries{db: p, sql: s.sql, secrets: s.secrets, watchers: s.watchers, indexes: s.indexes}}
	if err := fn(t); err != nil {
		p.rollback(ctx)
		return nil, err
	}
	if err := p.commit(ctx); err != nil {
		p.rollback(ctx)
		return nil, err
	}
	s.revokeCommitted(ctx, t)
	return func() { s.announceCommitted(ctx, t) }, nil
}

// pipe is the conn of a pipelined transaction: a pooled connection and the statements that
// wait to travel with the next one (the first of them BEGIN).
type pipe struct {
	conn    *pgxpool.Conn
	pending pgx.Batch
	sent    int // batches sent: the transaction's round trips
}

var errNoSavepoints = errors.New("store: a pipelined transaction takes no savepoints")

// send sends what waits followed by sql, reads the results of what waited (running their
// callbacks), and returns the batch positioned at sql's result. On an error it has closed
// the batch already.
func (p *pipe) send(ctx context.Context, sql string, args ...any) (pgx.BatchResults, error) {
	b := p.pending
	p.pending = pgx.Batch{}
	b.Queue(sql, args...)
	p.sent++
	br := p.conn.SendBatch(ctx, &b)
	for _, qq := range b.QueuedQueries[:len(b.QueuedQueries)-1] {
		var err error
		if qq.Fn != nil {
			err = qq.Fn(br)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	return br, nil
}

func (p *pipe) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br, err := p.send(ctx, sql, args...)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (p *pipe) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	br, err := p.send(ctx, sql, args...)
	if err != nil {
		return errorRow{err}
	}
	return batchRow{row: br.QueryRow(), br: br}
}

func (p *pipe) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br, err := p.send(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// CopyFrom runs COPY after what waits: COPY cannot travel in a batch.
func (p *pipe) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := p.flush(ctx); err != nil {
		return 0, err
	}
	return p.conn.CopyFrom(ctx, table, columns, src)
}

// SendBatch queues b to travel with the next statement; its results, and its callbacks, come
// then.
func (p *pipe) SendBatch(_ context.Context, b *pgx.Batch) pgx.BatchResults {
	p.pending.QueuedQueries = append(p.pending.QueuedQueries, b.QueuedQueries...)
	return queuedResults{}
}

func (p *pipe) Begin(context.Context) (pgx.Tx, error) { return nil, errNoSavepoints }

// flush sends what waits, if anything does.
func (p *pipe) flush(ctx context.Context) error {
	if len(p.pending.QueuedQueries) == 0 {
		return nil
	}
	b := p.pending
	p.pending = pgx.Batch{}
	p.sent++
	return p.conn.SendBatch(ctx, &b).Close()
}

// commit sends COMMIT with what waits; a transaction that never sent a statement has
// nothing to commit.
func (p *pipe) commit(ctx context.Context) error {
	if len(p.pending.QueuedQueries) == 1 && p.pending.QueuedQueries[0].SQL == "begin" {
		return nil
	}
	tag, err := p.Exec(ctx, "commit")
	if err == nil && tag.String() != "COMMIT" { // PostgreSQL ends a failed transaction so
		return pgx.ErrTxCommitRollback
	}
	return err
}

// rollback ends the transaction if the connection is still inside one; a connection it
// cannot bring back is closed by Release.
func (p *pipe) rollback(ctx context.Context) {
	if p.conn.Conn().PgConn().TxStatus() != 'I' {
		_, _ = p.conn.Exec(context.WithoutCancel(ctx), "rollback")
	}
}

// batchRow is the row of a QueryRow sent in a batch: scanning it reads the row, then closes
// the batch.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errorRow struct{ err error }

func (r errorRow) Scan(...any) error { return r.err }

// batchRows are the rows of a Query sent in a batch: closing them closes the batch too.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// queuedResults are what SendBatch returns for a batch that waits: nothing to read yet.
type queuedResults struct{}

var errQueued = errors.New("store: a pipelined transaction's batch has no results until its next statement")

func (queuedResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, errQueued }
func (queuedResults) Query() (pgx.Rows, error)         { return nil, errQueued }
func (queuedResults) QueryRow() pgx.Row                { return errorRow{errQueued} }
func (queuedResults) Close() error                     { return nil }
func (queuedResults) Tx() pgx.Tx                       { return nil }
