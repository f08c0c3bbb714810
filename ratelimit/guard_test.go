package ratelimit_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
)

// A standalone server killed: after the first call finds it gone, calls
// fail fast under the fallback without reaching go-redis's retries; started
// again, it decides within a few probes.
func TestGuardStandalone(t *testing.T) {
	srv := redisserver.New(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	sent := &scriptCounter{}
	rdb.AddHook(sent)
	l, err := ratelimit.New(rdb, "guard", ratelimit.PerSecond(1e6), ratelimit.WithFallback(ratelimit.FailClosed))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if d, err := l.Allow(ctx, "k"); err != nil || d.Cause != nil {
		t.Fatalf("before: %v, %v", d, err)
	}
	srv.Stop()
	start := time.Now()
	if d, _ := l.Allow(ctx, "k"); d.Fallback != ratelimit.FailClosed {
		t.Fatalf("the first call after the kill: %v", d)
	}
	first := time.Since(start)
	var took []time.Duration
	before := sent.n.Load()
	for i := 0; i < 200; i++ {
		start := time.Now()
		d, err := l.Allow(ctx, fmt.Sprint("k", i))
		took = append(took, time.Since(start))
		if err != nil || d.Fallback != ratelimit.FailClosed || !strings.Contains(fmt.Sprint(d.Cause), "unreachable") {
			t.Fatalf("call %d while down: %v, %v; want a fail-fast denial", i, d, err)
		}
	}
	// Failing fast means the calls never reach go-redis (whose retries
	// cost the first call its time); how fast that is depends on the
	// machine, so it is logged, not held to a bound.
	if n := sent.n.Load() - before; n != 0 {
		t.Errorf("%d of 200 calls on a dead server went to go-redis", n)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("first call after the kill %v; then p50 %v p99 %v", first, took[len(took)/2], took[len(took)*99/100])
	srv.Restart()
	back := time.Now()
	for {
		d, err := l.Allow(ctx, "k")
		if err == nil && d.Cause == nil {
			break
		}
		if time.Since(back) > 5*time.Second {
			t.Fatalf("no decision from Redis 5 s after the restart: %v, %v", d, err)
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("decisions from Redis %v after the restart", time.Since(back))
}

// All's pipeline gets the guard too: on a killed server its calls fail
// fast, none reaching go-redis, and decide from Redis again once it is
// back. (It went around the guard: every call spent go-redis's retries.)
func TestGuardAll(t *testing.T) {
	srv := redisserver.New(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	sent := &scriptCounter{}
	rdb.AddHook(sent)
	fast, _ := ratelimit.New(rdb, "fast", ratelimit.PerSecond(1e5), ratelimit.WithFallback(ratelimit.FailOpen))
	daily, _ := ratelimit.New(rdb, "daily", ratelimit.Per(1e6, 24*time.Hour), ratelimit.WithFallback(ratelimit.FailOpen))
	both, err := ratelimit.All(fast, daily)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if d, err := both.AllowN(ctx, "k", 1); err != nil || d.Cause != nil {
		t.Fatalf("before: %v, %v", d, err)
	}
	srv.Stop()
	both.AllowN(ctx, "k", 1) // finds it gone
	before := sent.n.Load()
	for i := 0; i < 100; i++ {
		d, err := both.AllowN(ctx, fmt.Sprint("k", i), 1)
		if err != nil || !d.Allowed || len(d.Parts) != 2 || !strings.Contains(fmt.Sprint(d.Parts[0].Cause, d.Parts[1].Cause), "unreachable") {
			t.Fatalf("call %d while down: %v, %v; want both limits decided by FailOpen, fast", i, d, err)
		}
	}
	if n := sent.n.Load() - before; n != 0 {
		t.Errorf("%d scripts of 100 All calls on a dead server went to go-redis", n)
	}
	srv.Restart()
	back := time.Now()
	for {
		d, err := both.AllowN(ctx, "k", 1)
		if err == nil && d.Parts[0].Cause == nil && d.Parts[1].Cause == nil {
			break
		}
		if time.Since(back) > 5*time.Second {
			t.Fatalf("no decision from Redis 5 s after the restart: %v, %v", d, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// scriptCounter counts the scripts a client is asked to send, alone or in
// pipelines.
type scriptCounter struct{ n atomic.Int64 }

func (*scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.HasPrefix(cmd.Name(), "eval") {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if strings.HasPrefix(cmd.Name(), "eval") {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}
