// Package store is the only package that speaks SQL. It owns the schema (embedded migrations,
// run by goose) and every query; each query on workspace data filters by workspace_id.
//
// The queries live in queries/*.sql; sqlc checks them against the schema and generates
// internal/dbsqlc (`make generate`). The methods here only convert between the generated rows and
// the store's types; they exist on Store (the pool) and on Tx (a transaction) alike.
//
// Lock order. Transactions that lock several of these rows take them in this order, so that
// two of them wait for each other instead of deadlocking: a contact; its conversations (in id
// order when several); the rows that name a conversation (messages, channel messages, calls,
// workflow runs, campaign sends; a campaign's row before its sends'); the workspaces' rows
// (in id order), last, as settling takes them until COMMIT. A writer that will write a row
// naming a conversation after rows of its own takes the conversation's KEY SHARE first
// (KeyShareConversations, KeyShareContact, KeyShareContacts): the lock the reference takes
// anyway, which the erasure's, the retention job's and the bulk delete's FOR UPDATE wait for,
// and which the turns' FOR NO KEY UPDATE does not block. Several rows of one table are locked
// in id order, picked first without a lock where a batch is chosen by a filter (the bulk
// deletes), or locked first by a statement of their own where they are written one by one in
// another order (a CSV import's contacts: LockLiveContactsByPhone; a batch of delivery
// reports' campaigns: LockReportedCampaigns; an agent's conversations and campaigns before
// its delete: LockAgentConversations, LockAgentCampaigns). A knowledge base's row comes
// before its chunks (DeleteChunks). Where a rare writer cannot keep the order (a delete
// whose cascades meet rows created while it waited), it runs again when aborted
// (AgainIfDeadlocked).
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard/apierr"
	"switchboard/secrets"
	"switchboard/store/internal/dbsqlc"
)

// AppName is the application_name of the server's database connections (pg_stat_activity):
// the main pool's; the others add what they are for ("switchboard hooks", "switchboard
// events", "switchboard replica lock").
const AppName = "switchboard"

var (
	// ErrNotFound is returned when a row does not exist (in the caller's workspace). The
	// store returns it as a *NotFoundError naming what was missing; errors.Is matches both.
	ErrNotFound = errors.New("not found")
	// ErrExists is returned when a unique row already exists.
	ErrExists = errors.New("already exists")
)

// NotFoundError names the kind of row that was not found ("agent", "response"), so one
// error table can say what is missing without every caller wrapping the error.
type NotFoundError struct {
	What string
}

func (e *NotFoundError) Error() string { return e.What + " not found" }

// Is makes errors.Is(err, ErrNotFound) hold for every not-found error of the store.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// Public is the 404 a caller sees (apierr.Public): the error table maps every not-found of
// the store, so handlers and operations return it as it is, naming the request field with
// apierr.WithParam where one applies. The code is the contract's `<what>_not_found`.
func (e *NotFoundError) Public() *apierr.Error {
	return apierr.NotFound("", strings.ReplaceAll(e.What, " ", "_")+"_not_found", "No %s with that id in this workspace.", e.What)
}

// notFound is the one place where pgx's "no rows" becomes the domain's not-found: every
// single-row query passes its error through it, naming what it looked for. So does a
// statement that fails as not found in the database itself (raise_not_found, migration 0022:
// no_data_found), as those that travel with COMMIT must.
func notFound(what string, err error) error {
	var pgErr *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || errors.As(err, &pgErr) && pgErr.Code == "P0002" { // no_data_found
		return &NotFoundError{What: what}
	}
	return err
}

// affected reports a statement that changed no row as not found, like a query that found
// none.
func affected(what string, n int64, err error) error {
	if err == nil && n == 0 {
		return &NotFoundError{What: what}
	}
	return err
}

// conn is what queries run on: the pool or a transaction. Both can also begin a (nested)
// transaction and send a pipelined batch, which a few methods need.
type conn interface {
	dbsqlc.DBTX
	Begin(ctx context.Context) (pgx.Tx, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// queries carries every query method of the store over one conn. Store embeds it over the
// pool and Tx over a transaction, so each method runs on either: a caller holding a Tx
// reads its own uncommitted writes, and one without runs the same method on the pool.
type queries struct {
	db  conn
	sql *dbsqlc.Queries
	// secrets seals the secrets the store keeps encrypted (webhook signing secrets); nil
	// when SECRETS_KEY is not configured.
	secrets *secrets.Keyring
	// watchers hear, in this process and at once, what is announced on RevocationChannel
	// (Watch); shared by every copy of the store over one pool.
	watchers *watchers
	// indexes keeps knowledge bases' chunks in memory for searches; shared like watchers.
	indexes *searchIndexes
}

// Store runs queries on a pgx pool.
type Store struct {
	queries
	pool *pgxpool.Pool
	// txObserver, when set (ObserveTx), is called around each InTx transaction (traces).
	txObserver func(ctx context.Context) (context.Context, func(error))
}

// New wraps a pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{queries: queries{db: pool, sql: dbsqlc.New(), watchers: &watchers{}, indexes: &searchIndexes{db: pool, reloadGap: searchIndexReloadGap}}, pool: pool}
}

// Open connects to databaseURL. The pool keeps pgxpool's default size, max(4, CPUs), unless
// pool_max_conns says otherwise: measured with bench/, 32 connections let about 30 turns of
// one workspace queue behind its row lock, and stored turns fell from 351/s to 93/s.
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	cfg, err := PoolConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return New(pool), nil
}

// WithSecrets returns the store over the same pool, sealing and opening secrets with keys.
func (s *Store) WithSecrets(keys *secrets.Keyring) *Store {
	return &Store{queries: queries{db: s.pool, sql: s.sql, secrets: keys, watchers: s.watchers, indexes: s.indexes}, pool: s.pool}
}

// WithOwnPool returns the store (same database, secrets and notices) over a pool of its own
// of at most maxConns connections, made like s's: for a path that must never wait for a
// connection behind other work (the carriers' webhooks behind the reply jobs). Close it
// with Close. Its connections are named as s's (AppName unless DATABASE_URL says otherwise),
// a space and name, in pg_stat_activity, so an operator (and the outage test) can tell the
// pools apart.
func (s *Store) WithOwnPool(ctx context.Context, maxConns int32, name string) (*Store, error) {
	cfg := s.pool.Config()
	cfg.ConnConfig.RuntimeParams["application_name"] = s.ConnName(name)
	cfg.MaxConns = maxConns
	cfg.MinConns = min(cfg.MinConns, maxConns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return &Store{queries: queries{db: pool, sql: s.sql, secrets: s.secrets, watchers: s.watchers, indexes: s.indexes}, pool: pool, txObserver: s.txObserver}, nil
}

// ConnName is the application_name for a connection of s's taken out of its pool for
// purpose ("events"): the pool's name, a space and purpose.
func (s *Store) ConnName(purpose string) string {
	return s.pool.Config().ConnConfig.RuntimeParams["application_name"] + " " + purpose
}

// Secrets is the keyring of the store; nil without SECRETS_KEY.
func (s *Store) Secrets() *secrets.Keyring { return s.secrets }

// Pool is the underlying pool, for packages that run their own machinery on it (job queue).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Deadlocked reports a transaction PostgreSQL aborted to break a deadlock (40P01): nothing
// it did was kept, and running it again is safe.
func Deadlocked(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}

// AgainIfDeadlocked runs the transaction run, and again while PostgreSQL aborts it to break a
// deadlock (nothing it did was kept), attempts times at most; it returns the last error. For a
// writer whose locks cannot all be taken in the house order (rows its own waits let others
// create), so that a cycle stays possible however rare.
func AgainIfDeadlocked(attempts int, run func() error) error {
	for attempt := 1; ; attempt++ {
		err := run()
		if !Deadlocked(err) || attempt >= attempts {
			return err
		}
	}
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
