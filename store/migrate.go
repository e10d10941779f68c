package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the embedded migration files, for tools that fingerprint the schema.
func Migrations() fs.FS { return migrationFiles }

const (
	// migrationLock serializes migrations of replicas starting together. It is the key the
	// runner before goose locked, so a replica still running that one waits for goose too.
	migrationLock = 7_301_946_520_113
	// versionTable is goose's record of applied migrations.
	versionTable = "goose_db_version"
	// legacyTable is the record of the runner before goose, adopted once (adoptLegacyVersions).
	legacyTable = "schema_migrations"
)

// Migrate applies the embedded migrations not yet applied, each in its own transaction, then
// the job queue's. It returns the versions of the embedded migrations it applied.
//
// goose runs them: it keeps the applied versions and holds a PostgreSQL advisory lock
// while it works, so replicas starting at once do not race. Each file is NNNN_name.sql and
// starts with `-- +goose Up`, which goose requires; there are no Down sections, the schema
// only moves forward.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	db := stdlib.OpenDBFromPool(pool) // closing it leaves the pool open
	defer db.Close()
	if err := adoptLegacyVersions(ctx, db); err != nil {
		return nil, fmt.Errorf("adopt %s: %w", legacyTable, err)
	}
	provider, err := migrationProvider(db)
	if err != nil {
		return nil, err
	}
	results, err := provider.Up(ctx)
	applied := make([]int, 0, len(results))
	for _, r := range results {
		if r.Error == nil {
			applied = append(applied, int(r.Source.Version))
		}
	}
	if err != nil {
		return applied, fmt.Errorf("migrate: %w", err)
	}
	return applied, migrateJobQueue(ctx, pool)
}

func migrationProvider(db *sql.DB) (*goose.Provider, error) {
	dir, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLock))
	if err != nil {
		return nil, err
	}
	store, err := database.NewStore(database.DialectPostgres, versionTable)
	if err != nil {
		return nil, err
	}
	// No global registry: the store's migrations are exactly the embedded SQL files.
	return goose.NewProvider("", db, dir, goose.WithStore(store), goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true))
}

// The few statements below are written by hand, not in queries/: they run through
// database/sql (goose's interface) or before the schema exists, on tables that are not part
// of the schema sqlc reads (the old runner's, goose's) or on no table at all (advisory locks).

// adoptLegacyVersions records in goose's table the versions that the runner before goose
// applied (its schema_migrations table), once: a database it migrated has that table and no
// goose table. Without this, goose would run every migration again on such a database. The
// old table stays, untouched, for whoever rolls back.
func adoptLegacyVersions(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// The lock is goose's key, so replicas adopt one at a time and never while another
	// migrates. It is taken outside the transaction: one waiting in a transaction holds a
	// snapshot, which a concurrent index build waits for (pollLock).
	if err := pollLock(ctx, func() (bool, error) {
		var locked bool
		err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, migrationLock).Scan(&locked)
		return locked, err
	}); err != nil {
		return err
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock)
	}()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var legacy, adopted bool
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL`,
		legacyTable, versionTable).Scan(&legacy, &adopted); err != nil {
		return err
	}
	if !legacy || adopted {
		return nil
	}
	if err := recordLegacyVersions(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// recordLegacyVersions creates goose's table the way goose does (with its version 0 row)
// and inserts each version of the legacy table.
func recordLegacyVersions(ctx context.Context, tx *sql.Tx) error {
	versions, err := legacyVersions(ctx, tx)
	if err != nil {
		return err
	}
	store, err := database.NewStore(database.DialectPostgres, versionTable)
	if err != nil {
		return err
	}
	if err := store.CreateVersionTable(ctx, tx); err != nil {
		return err
	}
	for _, v := range append([]int64{0}, versions...) {
		if err := store.Insert(ctx, tx, database.InsertRequest{Version: v}); err != nil {
			return err
		}
	}
	return nil
}

func legacyVersions(ctx context.Context, tx *sql.Tx) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version FROM `+legacyTable+` ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var versions []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		versions = append(versions, v)
	}
	return versions, rows.Err()
}

// migrateJobQueue applies the job queue's own schema (River's tables), which the durable
// work (background turns, webhook deliveries, crawls) runs on. rivermigrate takes no lock of
// its own, and some of its versions cannot share a transaction (one adds an enum value that
// the next uses), so it runs under the migration lock held on a connection of its own:
// replicas starting on an empty database would otherwise both create River's tables.
func migrateJobQueue(ctx context.Context, pool *pgxpool.Pool) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if err := pollLock(ctx, func() (bool, error) {
		var locked bool
		err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, migrationLock).Scan(&locked)
		return locked, err
	}); err != nil {
		return fmt.Errorf("lock job queue migrations: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock) }()
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("job queue migrations: %w", err)
	}
	return nil
}

// lockPoll is how often a replica waiting for the migration lock tries it again.
const lockPoll = 100 * time.Millisecond

// pollLock takes the migration lock by trying it until try reports it taken, instead of
// waiting in pg_advisory_lock: a statement waiting for a lock, or a transaction open while it
// waits, holds a snapshot all the while, and CREATE INDEX CONCURRENTLY (migration 0042), run
// by the replica that holds the lock, waits for every older snapshot to go. The two would
// wait for each other, until PostgreSQL cancelled one as a deadlock or forever. Each try
// is a statement of its own, outside any transaction, so the build goes on between tries.
// (goose's own locker polls too.)
func pollLock(ctx context.Context, try func() (bool, error)) error {
	for {
		locked, err := try()
		if err != nil || locked {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// MigrationsApplied reports whether the database has every embedded migration, for the
// readiness check: a replica of a newer build against a database it could not migrate is not
// ready. It takes no lock and writes nothing.
func MigrationsApplied(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := migrationProvider(db)
	if err != nil {
		return false, err
	}
	current, target, err := provider.GetVersions(ctx)
	if err != nil {
		return false, err
	}
	return current >= target, nil
}
