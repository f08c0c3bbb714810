// Package redisserver starts throwaway redis-server processes on free
// loopback ports for tests that run on a real server as well as on
// miniredis: the generator's (gen, cmd/luagen) and ratelimit's, and for
// a TestMain: the peers' own suites that compat/ runs (Main), the
// servers tier and the benchmarks (Standalone, Cluster).
//
// Without redis-server on PATH a test that needs one is skipped, with a
// message that says so, unless CI is set or REDLIMIT_REQUIRE_REDIS=1: then
// it fails, so CI can never pass without the real server.
package redisserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/child"
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

// Pause stops the server's process (SIGSTOP), as a long stall would: it
// keeps its connections and its data, and answers nothing until Resume.
func (s *Server) Pause() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatal(err)
	}
}

// Resume lets a paused server run on (SIGCONT).
func (s *Server) Resume() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatal(err)
	}
}

// Restart starts the server (again) on its address, with no data, and
// returns once it answers PING.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	cmd, err := launch(s.Addr, s.dir, s.extra)
	if err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
}

// launch starts redis-server on addr with its files in dir and returns
// once it answers PING; on an error the process is stopped.
func launch(addr, dir string, extra []string) (*exec.Cmd, error) {
	_, port, _ := net.SplitHostPort(addr)
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, extra...)
	cmd := child.Tie(exec.Command("redis-server", args...))
	log, err := os.OpenFile(filepath.Join(dir, "log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child keeps its own descriptor
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for i := 0; ; i++ {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return cmd, nil
		}
		if i == 200 {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			out, _ := os.ReadFile(filepath.Join(dir, "log"))
			return nil, fmt.Errorf("redis-server on %s did not answer PING: %v\n%s", addr, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Main is TestMain for a package whose tests all share one server and
// cannot start it themselves (the peers' own suites in compat/, whose
// helpers take no *testing.T): it starts a server, sets *addr to its
// address, runs the tests, stops the server and returns the exit code.
// Without redis-server it runs no test: under Required() it fails, and
// otherwise it says loudly that nothing ran.
func Main(m *testing.M, addr *string) int {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if Required() {
			fmt.Fprintln(os.Stderr, "FAIL: redis-server is not on PATH, and a real Redis is required here (CI or REDLIMIT_REQUIRE_REDIS=1)")
			return 1
		}
		fmt.Fprintln(os.Stderr, "*** SKIPPED: redis-server is not on PATH (apt-get install -y redis-server); NO test of this package ran")
		return 0
	}
	dir, err := os.MkdirTemp("", "redlimit-redis-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	a, stop, err := Standalone(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer stop()
	*addr = a
	return m.Run()
}

// Standalone starts a redis-server on a free loopback port with its files
// and its log in dir, and returns its address once it answers PING, and a
// stop that kills it. It is for a TestMain, which has no testing.TB to
// stop it; a test calls Start.
func Standalone(dir string) (addr string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr = l.Addr().String()
	l.Close()
	cmd, err := launch(addr, dir, nil)
	if err != nil {
		return "", nil, err
	}
	return addr, func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}, nil
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
