// Package testredis is the in-process Redis the tests and examples of
// ratelimit and its subpackages run on (a miniredis whose clock moves only
// when told, so that waits are exact), the layout of a limiter's keys
// that tests look for (Key), and Saturate, the busy machine some tests
// run on too.
package testredis

import (
	"context"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/child"
)

// T0 is where the clocks start: a whole day after the epoch, so windows of
// any length up to a day start there.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Example stands in for redis.NewClient(&redis.Options{Addr:
// "localhost:6379"}) in an Example: a miniredis whose clock stands still at
// T0, so that the examples print exact waits. A real server's clock moves
// on.
func Example() *redis.Client {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	m.SetTime(T0)
	return redis.NewClient(&redis.Options{Addr: m.Addr()})
}

// Frozen is a miniredis whose clock moves only with Advance, with TTLs on
// the same clock (miniredis's TIME follows SetTime, not FastForward).
type Frozen struct {
	*miniredis.Miniredis
	RDB *redis.Client
	Now time.Time
}

// NewFrozen starts a Frozen server at T0 for the test.
func NewFrozen(t testing.TB) *Frozen {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetTime(T0)
	m.ClockTTL(true)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return &Frozen{Miniredis: m, RDB: rdb, Now: T0}
}

// Advance moves the server's clock by d.
func (f *Frozen) Advance(d time.Duration) {
	f.Now = f.Now.Add(d)
	f.SetTime(f.Now)
}

// Down is a client of a Redis that is not there: the address of a port that
// was free a moment ago, and MaxRetries -1, so a call fails at once.
func Down(t testing.TB) *redis.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// Key is the Redis key where a limiter with prefix (by default
// "rl:<name>:") keeps key's state, as docs/limiters.md lays it out: key as
// the {hash tag}, with '%', '{' and '}' percent-encoded. It holds for keys
// of at most 200 bytes once encoded (longer ones are stored by their
// SHA-256). Tests that find their state at it hold the key builder to it.
func Key(prefix, key string) string {
	return prefix + "{" + strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D").Replace(key) + "}"
}

// Hook is a go-redis hook of functions, for tests that watch or change
// what a client sends: Process runs in place of each command and
// Pipeline of each pipeline (next sends it); a nil one passes it on, and
// dials always pass.
type Hook struct {
	Process  func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error
	Pipeline func(ctx context.Context, cmds []redis.Cmder, next redis.ProcessPipelineHook) error
}

func (h Hook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	if h.Process == nil {
		return next
	}
	return func(ctx context.Context, cmd redis.Cmder) error { return h.Process(ctx, cmd, next) }
}

func (h Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	if h.Pipeline == nil {
		return next
	}
	return func(ctx context.Context, cmds []redis.Cmder) error { return h.Pipeline(ctx, cmds, next) }
}

// Saturate starts a busy loop on every core, each a process of its own (as
// the rest of a machine's work would be: busy goroutines in the test's
// process would delay what it runs, not compete with it), until t ends.
// The loops slow every package go test runs beside the test, so tests
// saturate only with REDLIMIT_SATURATE=1, which make test sets for them in
// a step of its own.
func Saturate(t testing.TB) {
	t.Helper()
	for range runtime.NumCPU() {
		cmd := child.Tie(exec.Command("sh", "-c", "while :; do :; done"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
}
