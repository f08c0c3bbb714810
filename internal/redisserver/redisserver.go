// Package redisserver starts throwaway redis-server processes on free
// loopback ports for the generator's tests (gen, cmd/luagen), which run
// generated code on a real server as well as on miniredis.
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
	if _, err := exec.LookPath("redis-server"); err != nil {
		if Required() {
			t.Fatal("redis-server is not on PATH, and a real Redis is required here (CI or REDLIMIT_REQUIRE_REDIS=1)")
		}
		t.Skip("SKIPPED: redis-server is not on PATH (apt-get install -y redis-server); the real-Redis part of this test did not run")
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, extra...)
	cmd := exec.Command("redis-server", args...)
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for i := 0; ; i++ {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return addr
		}
		if i == 200 {
			out, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("redis-server on %s did not answer PING: %v\n%s", addr, err, out)
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
