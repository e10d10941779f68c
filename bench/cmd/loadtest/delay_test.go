package main

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestDelayForwardsBothWaysAndHalfCloses: what goes through the delay forwarder arrives
// whole and in order both ways (a megabyte, many chunks), and a client's half-close reaches
// the target, whose answer still comes back.
func TestDelayForwardsBothWaysAndHalfCloses(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	go func() {
		c, err := target.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		got, _ := io.ReadAll(c) // until the client's half-close
		_, _ = c.Write(append([]byte("echo:"), got...))
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { _ = serveDelayed(ln, target.Addr().String(), 200*time.Microsecond) }()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	go func() {
		_, _ = c.Write(sent)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	back, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, append([]byte("echo:"), sent...)) {
		t.Fatalf("got %d bytes back, want %d", len(back), len(sent)+5)
	}
}
