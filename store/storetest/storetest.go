// Package storetest gives each test its own PostgreSQL database, cloned from a template that
// holds the migrated schema, so tests run in parallel on real PostgreSQL without seeing each
// other's rows. TEST_DATABASE_URL names the cluster's admin database; `make test` starts a
// throwaway cluster and sets it.
//
// pgtestdb does the cloning: it creates the template once per schema (named by a hash of the
// migrations), serializes that across test binaries, clones it per test, and drops the clone
// when the test passes (a failed test's database is kept for a look; the URL is logged).
package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver pgtestdb connects with
	"github.com/peterldowns/pgtestdb"
	"github.com/peterldowns/pgtestdb/migrators/common"

	"switchboard/secrets"
	"switchboard/store"
)

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
	return pgtestdb.Custom(t, config(t), migrator{}).URL()
}

// New returns a Store on a fresh migrated database, closed when the test ends. It seals
// secrets with a key of its own (Keyring).
func New(t testing.TB) *store.Store {
	t.Helper()
	cfg, err := store.PoolConfig(NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return store.New(pool).WithSecrets(Keyring(t))
}

// Keyring returns a keyring with a new random key, as SECRETS_KEY would configure.
func Keyring(t testing.TB) *secrets.Keyring {
	t.Helper()
	k, _, err := secrets.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return secrets.NewKeyring(k)
}

// config reads TEST_DATABASE_URL into pgtestdb's terms. Tests and the template connect as
// pgtestdb's role, which is not a superuser, like the server's own role in production.
func config(t testing.TB) pgtestdb.Config {
	t.Helper()
	u, err := url.Parse(AdminURL(t))
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL is not a URL: %v", err)
	}
	password, _ := u.User.Password()
	return pgtestdb.Config{
		DriverName: "pgx",
		Host:       u.Hostname(),
		Port:       u.Port(),
		User:       u.User.Username(),
		Password:   password,
		Database:   strings.TrimPrefix(u.Path, "/"),
		Options:    u.RawQuery,
		// Servers under test may still hold connections when a test ends (a child
		// process, a listener): drop the database anyway, as the old helper did.
		ForceTerminateConnections: true,
	}
}

// migrator builds the template with the store's own Migrate, so tests run on exactly the
// schema that `switchboard migrate` gives (the store's migrations and River's).
type migrator struct{}

// Hash names the template after the migrations, so a changed migration gets a new one.
func (migrator) Hash() (string, error) {
	return common.HashDirs(store.Migrations(), "*.sql", "migrations")
}

func (migrator) Migrate(ctx context.Context, _ *sql.DB, conf pgtestdb.Config) error {
	pool, err := pgxpool.New(ctx, conf.URL())
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = store.Migrate(ctx, pool)
	return err
}

// NewEmptyURL creates a fresh database with no schema at all, for tests of migrating itself.
// It is dropped when the test ends.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	return pgtestdb.Custom(t, config(t), pgtestdb.NoopMigrator{}).URL()
}

// InBackground starts run, for a test of what waits for a lock, with a deadline (it only stops
// a run that waits for ever; a correct one takes milliseconds); done is closed when it
// returns, and *errp is its error.
func InBackground(run func(ctx context.Context) error) (done <-chan struct{}, errp *error) {
	ch, err := make(chan struct{}), new(error)
	go func() {
		defer close(ch)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		*err = run(ctx)
	}()
	return ch, err
}

// WaitBlockedOrDone returns once a session of the test's database waits for a lock (what the
// test runs in the background has reached a row the test's open transaction holds) or done
// is closed (it finished without waiting; a nil done never is). It fails the test after 20 s.
func WaitBlockedOrDone(t testing.TB, st *store.Store, done <-chan struct{}) {
	t.Helper()
	WaitWaitersOrDone(t, st, 1, done)
}

// WaitWaitersOrDone is WaitBlockedOrDone for n sessions waiting for locks at once: each of n
// transactions the test runs in the background has reached the row it waits for.
func WaitWaitersOrDone(t testing.TB, st *store.Store, n int, done <-chan struct{}) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		}
		var waiting int
		if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
	}
	t.Fatalf("neither %d sessions waiting for locks nor done after 20 s", n)
}

// holds numbers the triggers HoldWrites creates, and their advisory locks.
var holds atomic.Int64

// HoldWrites makes the writes to table that ops names ("INSERT", "UPDATE", "INSERT OR
// UPDATE") and when admits (a trigger's WHEN condition over OLD and NEW; "" admits all) wait,
// once written, until release is called: the test stops a transaction right after that
// write, holding what it has locked so far (an advisory lock, which the test holds on a
// connection of its own, makes them wait, so storetest.WaitBlockedOrDone sees them). Release
// runs at the test's end if the test has not called it.
func HoldWrites(t testing.TB, st *store.Store, table, ops, when string) (release func()) {
	t.Helper()
	ctx := context.Background()
	n := holds.Add(1)
	key := 4_200_000 + n
	name := fmt.Sprintf("storetest_hold_%d", n)
	if when != "" {
		when = "WHEN (" + when + ")"
	}
	_, err := st.Pool().Exec(ctx, fmt.Sprintf(`CREATE FUNCTION %[1]s() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_advisory_xact_lock(%[2]d); RETURN NULL; END $$;
		CREATE TRIGGER %[1]s AFTER %[3]s ON %[4]s FOR EACH ROW %[5]s EXECUTE FUNCTION %[1]s();`, name, key, ops, table, when))
	if err != nil {
		t.Fatal(err)
	}
	holder, err := st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		holder.Release()
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_, _ = holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key)
			holder.Release()
		})
	}
	t.Cleanup(release)
	return release
}
