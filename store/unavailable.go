package store

import (
	"context"
	"errors"
	"io"
	"net"
	"reflect"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"switchboard/apierr"
)

// Unavailable reports whether err is PostgreSQL being out of reach rather than a failure of
// the statement: no connection could be made (refused, timed out, the server starting or
// shutting down), or the connection broke under the statement. Such a request would succeed
// once the database is back, so the surfaces answer it 503 `database_unavailable` with
// Retry-After (Unavailability) instead of a 500.
//
// Only errors that came through the driver count: a network error of another dependency (a
// model vendor refusing the connection) stays what it is.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return unavailableState(pe.Code)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller's own deadline or hang-up, not the database's state
	}
	if errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	return fromDriver(err) && brokenConnection(err)
}

// unavailableState: class 08 (connection exception), 57P01-57P03 (the server shutting down
// or starting: admin_shutdown, crash_shutdown, cannot_connect_now) and 53300
// (too_many_connections).
func unavailableState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03", code == "53300":
		return true
	}
	return false
}

// fromDriver tells an error that passed through pgconn (its chain holds one of pgconn's
// own error types): the driver's I/O, not some other connection's.
func fromDriver(err error) bool {
	found := false
	walkErrors(err, func(e error) {
		t := reflect.TypeOf(e)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.PkgPath() == "github.com/jackc/pgx/v5/pgconn" {
			found = true
		}
	})
	return found
}

func brokenConnection(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

func walkErrors(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) { //nolint:errorlint // walking the chain by hand
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, f)
		}
	}
}

// Unavailability is err's public form when it is the database being out of reach
// (Unavailable), else nil.
func Unavailability(err error) *apierr.Error {
	if !Unavailable(err) {
		return nil
	}
	return apierr.DatabaseUnavailable(err)
}
