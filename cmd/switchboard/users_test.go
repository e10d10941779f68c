package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsersCreate: the command prints the one-time set-password link alone on stdout;
// bad input is a usage error naming what is wrong.
func TestUsersCreate(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.env["PUBLIC_BASE_URL"] = "https://switchboard.example.com"
	c.must("migrate")
	c.must("workspaces", "create", "acme")

	out, errOut, err := c.run("users", "create", "--workspace", "acme", "--email", "Ann@Example.com", "--role", "admin")
	require.NoError(t, err, errOut)
	require.Regexp(t, `^https://switchboard\.example\.com/dashboard/set-password\?token=[A-Za-z0-9_-]{43}\n$`, out)
	require.Contains(t, errOut, "ann@example.com (role admin) of workspace acme")

	_, _, err = c.run("users", "create", "--workspace", "acme", "--email", "ann@example.com", "--role", "admin")
	require.ErrorContains(t, err, "already exists")
	_, _, err = c.run("users", "create", "--workspace", "nope", "--email", "bob@example.com", "--role", "admin")
	require.ErrorContains(t, err, `No workspace is named "nope"`)
	for _, args := range [][]string{
		{"users", "create", "--workspace", "acme", "--email", "not an email", "--role", "admin"},
		{"users", "create", "--workspace", "acme", "--email", "bob@example.com", "--role", "root"},
		{"users", "create", "--workspace", "acme"},
		{"users", "delete"},
	} {
		_, _, err := c.run(args...)
		require.ErrorAs(t, err, &usageError{}, strings.Join(args, " "))
	}
}
