package main

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBusyPortNamesADDR: a port in use fails the start with a message naming ADDR.
func TestBusyPortNamesADDR(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	busy, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	c.env["ADDR"] = busy.Addr().String()
	err = run(context.Background(), []string{"serve"}, c.getenv, io.Discard, io.Discard)
	require.ErrorContains(t, err, "address already in use")
	require.ErrorContains(t, err, "set ADDR to a free address")
}
