// Package storetest gives each test its own PostgreSQL database, cloned from a template that
// holds the migrated schema, so tests run in parallel on real PostgreSQL without seeing each
// other's rows. TEST_DATABASE_URL names the cluster's admin database; `make test` starts a
// throwaway cluster and sets it.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard/store"
)

// cloneLock serializes template creation and cloning across test binaries: PostgreSQL refuses
// to clone a template while anyone is connected to it.
const cloneLock = 7_301_946_520_114

// AdminURL is TEST_DATABASE_URL; the test fails if it is unset.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TEST_DATABASE_URL")
	if u == "" {
		t.Fatal("TEST_DATABASE_URL is not set: run the tests with `make test`, which starts a throwaway PostgreSQL")
	}
	return u
}

// NewURL creates a fresh migrated database and returns its connection string. The database
// is dropped when the test ends.
func NewURL(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	admin := AdminURL(t)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to TEST_DATABASE_URL: %v", err)
	}
	defer conn.Close(ctx)

	name := "sbtest_" + randomHex(8)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, cloneLock); err != nil {
		t.Fatal(err)
	}
	template, err := ensureTemplate(ctx, conn, admin)
	if err == nil {
		_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, template))
	}
	_, _ = conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, cloneLock)
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
	})
	return withDatabaseURL(admin, name)
}

// New returns a Store on a fresh migrated database, closed when the test ends.
func New(t testing.TB) *store.Store {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return store.New(pool)
}

// ensureTemplate creates (once per schema version) a database holding the migrated schema.
// Its name carries a hash of the migrations, so a changed migration gets a new template.
func ensureTemplate(ctx context.Context, conn *pgx.Conn, admin string) (string, error) {
	name := "sbtmpl_" + migrationsHash()
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s`, name)); err != nil {
			return "", err
		}
	}
	// Migrate even when it existed: a run that died half-way left it partly migrated, and
	// migrating a migrated database is a no-op.
	pool, err := pgxpool.New(ctx, withDatabaseURL(admin, name))
	if err != nil {
		return "", err
	}
	defer pool.Close()
	if _, err := store.Migrate(ctx, pool); err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	return name, nil
}

func migrationsHash() string {
	h := sha256.New()
	_ = fs.WalkDir(store.Migrations(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(store.Migrations(), path)
		h.Write([]byte(path))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func withDatabaseURL(admin, name string) string {
	u, err := url.Parse(admin)
	if err != nil {
		panic(fmt.Sprintf("TEST_DATABASE_URL is not a URL: %v", err))
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
