// Package redistest starts a real redis-server for tests: a child process on a free loopback
// port, without persistence, stopped when the test ends. redis-server comes from Debian's
// package (scripts/ensure-redis.sh installs it; scripts/with-test-db.sh runs that).
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Server is a running redis-server.
type Server struct {
	URL  string // redis://127.0.0.1:PORT/0
	Addr string
	cmd  *exec.Cmd
}

// Start runs a redis-server for the test; it is killed at the test's end.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		// As the browser tests do without Chromium: skipped on a machine where make test could
		// not install it (it said so first), a failure under CI.
		const msg = "redis-server not found: run scripts/ensure-redis.sh (apt-get install redis-server); make test does"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	port := freePort(t)
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--protected-mode", "no", "--loglevel", "warning")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd}
	s.URL = "redis://" + s.Addr + "/0"
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
		}
	}()
	t.Cleanup(s.Stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return s
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			t.Fatalf("redis-server never listened on %s", s.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (a lost Redis, for fail-open tests); it may be called again.
func (s *Server) Stop() {
	if s.cmd.Process != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
