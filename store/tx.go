package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/store/internal/dbsqlc"
)

// Tx is a transaction: the writes of one turn (messages, response, ledger, events) commit
// together or not at all. Every query method of Store exists on Tx too (the embedded
// queries), running inside the transaction.
type Tx struct {
	queries
	tx         pgx.Tx   // nil in a pipelined transaction (Store.Pipelined)
	notices    []Notice // announcements of the events appended, sent after commit
	keyNotices []string // announcements of the idempotency keys completed, sent after commit
	// moneyChanged holds the workspaces whose charge in this transaction made them unable to
	// work (credit used up, monthly cap reached): announced after commit (RevocationChannel).
	moneyChanged []uuid.UUID
	// dispatched is set when the transaction queued events for the webhook relay: the relays
	// are woken after commit (DispatchChannel).
	dispatched bool
}

// InTx runs fn in a transaction, committed when fn returns nil. The events it appended are
// announced after the commit (Announce).
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) (err error) {
	if s.txObserver != nil {
		var done func(error)
		ctx, done = s.txObserver(ctx)
		defer func() { done(err) }()
	}
	var t *Tx
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t = &Tx{queries: queries{db: tx, sql: s.sql, secrets: s.secrets, watchers: s.watchers, indexes: s.indexes}, tx: tx}
		return fn(t)
	})
	if err == nil {
		s.afterCommit(ctx, t)
	}
	return err
}

// ObserveTx sets the function called as each InTx transaction begins; the transaction runs
// in the context it returns, and done gets its outcome. Set it before the store is shared.
func (s *Store) ObserveTx(f func(ctx context.Context) (_ context.Context, done func(error))) {
	s.txObserver = f
}

// inTx runs fn in a transaction: a real one on the pool, a savepoint inside a Tx, so a
// method that needs several statements to commit together works on both.
func (q *queries) inTx(ctx context.Context, fn func(q *queries) error) error {
	return pgx.BeginFunc(ctx, q.db, func(tx pgx.Tx) error {
		return fn(&queries{db: tx, sql: q.sql, secrets: q.secrets, watchers: q.watchers, indexes: q.indexes})
	})
}

// ErrNeedsPlainTx is what a write that needs a plain transaction (a job's insert, Pgx)
// returns when asked in a pipelined one (Tx.Pipelined): its caller commits it again in a
// plain transaction (the group commit of a turn whose Turn.Also inserted a job).
var ErrNeedsPlainTx = errors.New("store: this write needs a plain transaction, not a pipelined one")

// Pipelined tells whether t is a pipelined transaction (Store.Pipelined), which has no
// pgx.Tx to give the job queue.
func (t *Tx) Pipelined() bool { return t.tx == nil }

// Pgx exposes the transaction to the job queue, whose inserts must commit together with the
// store's writes. A pipelined transaction (Store.Pipelined) has none to expose: check
// Pipelined first, and return ErrNeedsPlainTx.
func (t *Tx) Pgx() pgx.Tx {
	if t.tx == nil {
		panic("store: Pgx on a pipelined transaction")
	}
	return t.tx
}

// afterCommit announces what a committed transaction asked for: the workspaces its charges
// stopped, then its events, the relays' wake-up and the idempotency keys it completed.
func (s *Store) afterCommit(ctx context.Context, t *Tx) {
	s.revokeCommitted(ctx, t)
	s.announceCommitted(ctx, t)
}

// revokeCommitted announces the workspaces the transaction's charges made unable to work
// (credit used up, monthly cap reached). It runs before whoever waits on the commit is
// answered: this process's cached keys hear it at once, so the request that follows the
// answer is refused. A lost announcement leaves other replicas' keys cached until
// AUTH_CACHE_TTL.
func (s *Store) revokeCommitted(ctx context.Context, t *Tx) {
	for _, id := range t.moneyChanged {
		_ = s.announceRevocation(context.WithoutCancel(ctx), Revocation{WorkspaceID: &id})
	}
}

// announceCommitted announces the transaction's events, wakes the webhook relays if it
// queued deliveries, and the waiters of the idempotency keys it completed.
func (s *Store) announceCommitted(ctx context.Context, t *Tx) {
	ctx = context.WithoutCancel(ctx)
	if len(t.notices) > 0 {
		s.announce(ctx, t.notices)
	}
	if t.dispatched {
		// A lost announcement delays the deliveries until a relay's next sweep.
		_ = s.sql.Announce(ctx, s.pool, dbsqlc.AnnounceParams{Channel: DispatchChannel, Payloads: []string{""}})
	}
	if len(t.keyNotices) > 0 {
		// A lost announcement only delays the waiters until their next re-check.
		_ = s.sql.Announce(ctx, s.pool, dbsqlc.AnnounceParams{Channel: IdempotencyChannel, Payloads: t.keyNotices})
	}
}
