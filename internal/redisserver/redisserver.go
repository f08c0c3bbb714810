// Package redisserver starts throwaway redis-server processes on free
// loopback ports for tests that run on a real server as well as on
// miniredis: the generator's (gen, cmd/luagen) and ratelimit's.
//
// Without redis-server on PATH a test that needs one is skipped, with a
// message that says so, unless CI is set or REDLIMIT_REQUIRE_REDIS=1: then
// it fails, so CI can never pass without the real server.
package redisserver

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Required reports whether a missing real server is a failure.
func Required() bool {
	return os.Getenv("CI") != "" || os.Getenv("REDLIMIT_REQUIRE_REDIS") == "1"
}

// Start runs redis-server with extra arguments (such as "--rename-command",
// "EVAL_RO", "") and returns its address. The server is stopped when the
// test ends.
func Start(t testing.TB, extra ...string) string {
	t.Helper()
	return New(t, extra...).Addr
}

// A Server is a redis-server of the test's own, which the test can kill
// and start again on the same address (ratelimit's failure-policy test).
type Server struct {
	Addr  string
	t     testing.TB
	dir   string
	extra []string
	cmd   *exec.Cmd
}

// New starts a Server on a free loopback port, skipping or failing the
// test as Start does when redis-server is missing. It is killed when the
// test ends.
func New(t testing.TB, extra ...string) *Server {
	t.Helper()
	needServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return newOn(t, addr, extra...)
}

// needServer skips the test, or fails it where a real server is required,
// when redis-server is missing.
func needServer(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if Required() {
			t.Fatal("redis-server is not on PATH, and a real Redis is required here (CI or REDLIMIT_REQUIRE_REDIS=1)")
		}
		t.Skip("SKIPPED: redis-server is not on PATH (apt-get install -y redis-server); the real-Redis part of this test did not run")
	}
}

// newOn starts a Server on addr.
func newOn(t testing.TB, addr string, extra ...string) *Server {
	t.Helper()
	s := &Server{Addr: addr, t: t, dir: t.TempDir(), extra: extra}
	t.Cleanup(s.Stop)
	s.Restart()
	return s
}

// Stop kills the server, as a crash would, and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		s.cmd = nil
	}
}

// Restart starts the server (again) on its address, with no data, and
// returns once it answers PING.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	_, port, _ := net.SplitHostPort(s.Addr)
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", s.dir}, s.extra...)
	cmd := exec.Command("redis-server", args...)
	log, err := os.OpenFile(filepath.Join(s.dir, "log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer log.Close() // the child keeps its own descriptor
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	for i := 0; ; i++ {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return
		}
		if i == 200 {
			out, _ := os.ReadFile(filepath.Join(s.dir, "log"))
			s.t.Fatalf("redis-server on %s did not answer PING: %v\n%s", s.Addr, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Maybe is Start for tests that also run without a real server: where
// redis-server is missing and not required it returns "" (and logs why)
// instead of skipping the whole test.
func Maybe(t testing.TB, extra ...string) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil && !Required() {
		t.Log("*** redis-server is not on PATH: the real-Redis part of this test did NOT run (apt-get install -y redis-server)")
		return ""
	}
	return Start(t, extra...)
}
