package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/apikey"
)

// TestServeTimeouts runs the real serve with short time-outs: a client trickling its body is
// cut off, and the event feed, streaming for many times the write time-out, is not.
func TestServeTimeouts(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	key, _, _ := apikey.New()
	addr := freeAddr(t)
	c.env["BOOTSTRAP_API_KEY"] = key
	c.env["ADDR"] = addr
	c.env["SSE_PING_INTERVAL"] = "20ms"
	c.env["REQUEST_BODY_TIMEOUT"] = "100ms"
	cfg, err := loadConfig(c.getenv)
	require.NoError(t, err)
	require.Equal(t, 100*time.Millisecond, cfg.HTTP.Body)
	cfg.HTTP.Write = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	waitHealthy(t, "http://"+addr)

	t.Run("a trickled body is cut off", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+key+
			"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":")
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second))) // a safety net only
		// Trickle the rest a byte at a time until the server answers or hangs up.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := io.WriteString(conn, " "); err != nil {
						return
					}
				}
			}
		}()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err, "the answer is complete")
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", raw)
		require.True(t, resp.Close, "the server closes the connection after the 408")
		var env struct {
			Error struct{ Message, Type, Code string }
		}
		require.NoError(t, json.Unmarshal(raw, &env))
		require.Equal(t, "request_timeout", env.Error.Code)
		require.Equal(t, "invalid_request_error", env.Error.Type)
		require.Contains(t, env.Error.Message, "100ms")
		_, err = io.Copy(io.Discard, conn)
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection open: %v", err)
	})

	t.Run("the event feed outlives the write time-out", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		lines := bufio.NewScanner(resp.Body)
		pings := 0
		for pings < 20 && lines.Scan() { // 20 pings 20 ms apart: 8 write time-outs
			if strings.HasPrefix(lines.Text(), ":ping") {
				pings++
			}
		}
		require.NoError(t, lines.Err())
		require.Equal(t, 20, pings)
	})
}
