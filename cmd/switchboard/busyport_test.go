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

// TestBusySidePortNamesItsVariable: a side port in use fails the start naming its variable,
// and the side port bound before it is let go (the next start can use it).
func TestBusySidePortNamesItsVariable(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	busy, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	c.env["ADDR"] = freeAddr(t)
	c.env["METRICS_ADDR"] = freeAddr(t)
	c.env["PPROF_ADDR"] = busy.Addr().String()
	err = run(context.Background(), []string{"serve"}, c.getenv, io.Discard, io.Discard)
	require.ErrorContains(t, err, "set PPROF_ADDR to a free address")

	for _, v := range []string{"ADDR", "METRICS_ADDR"} {
		ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", c.env[v])
		require.NoError(t, err, "%s is free again", v)
		ln.Close()
	}
}
