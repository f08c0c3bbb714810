package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
)

// behind makes n requests for key on l while the first call (of another
// request) waits at g, and returns their answers once they are all queued
// behind it and it is let through. call makes one request.
func behind(t *testing.T, g *gate, l *ratelimit.Limiter, key string, n int, call func(i int) (ratelimit.Decision, error)) ([]ratelimit.Decision, []error) {
	t.Helper()
	g.hold()
	first := make(chan error, 1)
	go func() { _, err := l.Peek(ctx, key); first <- err }()
	g.waitArrived(t, 1)
	ds, errs := make([]ratelimit.Decision, n), make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); ds[i], errs[i] = call(i) }()
	}
	queued(t, l, key, n)
	g.release()
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	return ds, errs
}

// Coalescing keeps every other promise of the limiter: the deny cache, the
// fallbacks, a caller clock, the timeout, the hook, WithLockout and Wait.
func TestCoalescingKeeps(t *testing.T) {
	t.Run("the deny cache", func(t *testing.T) {
		// A batch's denials feed the cache; a cached denial never enters
		// the coalescer, so it answers while a call for the key is in flight.
		f := newFrozen(t)
		g := newGate(t, f.rdb, f.rdb)
		l, _ := ratelimit.New(g, "dc", ratelimit.PerMinute(2), ratelimit.WithDenyCache(100))
		ds, _ := behind(t, g, l, "k", 5, func(int) (ratelimit.Decision, error) { return l.Allow(ctx, "k") })
		allowed := 0
		for _, d := range ds {
			if d.Allowed {
				allowed++
			}
		}
		if allowed != 2 || fmt.Sprint(g.requests()) != "[1 5]" {
			t.Fatalf("%d allowed, calls %v", allowed, g.requests())
		}
		// The batch's answers are noted in the order their callers wake,
		// the admissions maybe after the denials: the cache keeps Redis's
		// newest answer by its ticket, a denial.
		g.hold()
		go l.Peek(ctx, "other")
		g.waitArrived(t, 1)
		bounded, cancel := context.WithTimeout(ctx, 2*time.Second) // a miss waits at the gate
		defer cancel()
		if d, err := l.Allow(bounded, "k"); err != nil || !d.Cached {
			t.Errorf("after the batch's denials: %v, %v; want a cached denial", d, err)
		}
		g.release()
	})
	t.Run("a failure policy, for each request of a failed batch", func(t *testing.T) {
		f := newFrozen(t)
		g := newGate(t, f.rdb, f.rdb)
		var events atomic.Int64
		l, _ := ratelimit.New(&failing{g}, "fp", ratelimit.PerMinute(2), ratelimit.WithFallback(ratelimit.FailOpen),
			ratelimit.WithHook(func(context.Context, ratelimit.Event) { events.Add(1) }))
		ds, errs := behind(t, g, l, "k", 6, func(int) (ratelimit.Decision, error) { return l.Allow(ctx, "k") })
		for i, d := range ds {
			if errs[i] != nil || !d.Allowed || d.Fallback != ratelimit.FailOpen || !errors.Is(d.Cause, ratelimit.ErrUnavailable) {
				t.Errorf("request %d of the failed batch: %v, %v", i, d, errs[i])
			}
		}
		if n := events.Load(); n != 7 {
			t.Errorf("%d hook events, want one per request: 7", n)
		}
	})
	t.Run("a caller clock", func(t *testing.T) {
		// Requests that read the same µs go together; another µs waits its
		// turn, so every request is judged at its own clock.
		f := newFrozen(t)
		g := newGate(t, f.rdb, f.rdb)
		var tick atomic.Int64
		l, _ := ratelimit.New(g, "clock", ratelimit.PerMinute(10), ratelimit.WithClock(func() time.Time {
			return t0.Add(time.Duration(tick.Load()) * time.Microsecond)
		}))
		behind(t, g, l, "k", 4, func(int) (ratelimit.Decision, error) { return l.Allow(ctx, "k") })
		tick.Add(1)
		behind(t, g, l, "k", 2, func(i int) (ratelimit.Decision, error) {
			if i == 1 {
				queued(t, l, "k", 1)
				tick.Add(1)
			}
			return l.Allow(ctx, "k")
		})
		if diff := cmp.Diff([]int{1, 4, 1, 1, 1}, g.requests()); diff != "" {
			t.Errorf("requests per call (-want +got):\n%s", diff)
		}
	})
	t.Run("the timeout", func(t *testing.T) {
		// A queued request whose limiter's timeout passes fails as a call
		// that timed out would (here the policy decides), is never sent,
		// and counts nothing; so does the one in flight, held past it:
		// Redis (its TIME frozen before the deadline) counts it when the
		// gate lets it through, and its late answer is given back.
		f := newFrozen(t)
		g := newGate(t, f.rdb, f.rdb)
		refunds := make(chan ratelimit.Event, 10)
		l, _ := ratelimit.New(g, "to", ratelimit.PerMinute(10), ratelimit.WithTimeout(30*time.Millisecond), ratelimit.WithFallback(ratelimit.FailClosed),
			ratelimit.WithHook(func(_ context.Context, e ratelimit.Event) {
				if e.Decision.Source == "late-refund" {
					refunds <- e
				}
			}))
		g.hold()
		first := make(chan ratelimit.Decision, 1)
		go func() { d, _ := l.Allow(ctx, "k"); first <- d }()
		g.waitArrived(t, 1)
		for i, d := range []ratelimit.Decision{must(l.AllowN(ctx, "k", 5)), <-first} {
			if d.Allowed || d.Fallback != ratelimit.FailClosed || !errors.Is(d.Cause, ratelimit.ErrUnavailable) {
				t.Errorf("request %d past the timeout: %v", i, d)
			}
		}
		g.release()
		select {
		case e := <-refunds:
			if e.Err != nil || e.Cost != -1 || e.Key != "k" {
				t.Errorf("the late answer's refund: %+v", e)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no refund of the late answer within 5 s")
		}
		if d, _ := l.Peek(ctx, "k"); d.Remaining != 10 {
			t.Errorf("after two requests past their timeout: %v, want 10 left", d)
		}
		if n := len(g.arrived); n != 2 {
			t.Errorf("%d more calls set out for Redis, want 2 (the refund, the Peek): the request that timed out queued was sent", n)
		}
	})
	t.Run("WithLockout", func(t *testing.T) {
		// Each of a locked-out limiter's GCRA steps coalesces: the
		// lockout's peek, the limit (GCRA here; a lockout's default, the
		// sliding log, sends one call per decision), the lockout's start.
		f := newFrozen(t)
		g := newGate(t, f.rdb, f.rdb)
		l, _ := ratelimit.New(g, "blk", ratelimit.PerMinute(3), ratelimit.WithLockout(time.Hour), ratelimit.WithAlgorithm(ratelimit.GCRA))
		ds, _ := behind(t, g, l, "k", 8, func(int) (ratelimit.Decision, error) { return l.Allow(ctx, "k") })
		allowed := 0
		for _, d := range ds {
			if d.Allowed {
				allowed++
			}
		}
		if d, _ := l.Allow(ctx, "k"); allowed != 3 || d.Allowed || d.RetryAfter < 59*time.Minute {
			t.Errorf("%d allowed of 8, then %v: want 3, then the lockout", allowed, d)
		}
		most := 0
		for _, n := range g.requests() {
			most = max(most, n)
		}
		if most < 8 {
			t.Errorf("calls %v: the 8 lockout peeks did not go together", g.requests())
		}
	})
}

func must(d ratelimit.Decision, err error) ratelimit.Decision {
	if err != nil {
		panic(err)
	}
	return d
}

// failing fails every batch of more than one request as a dropped
// connection would, after the gate.
type failing struct{ *gate }

func (f *failing) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	if len(args) > 7 {
		f.gate.pass(args, func() *redis.Cmd { return redis.NewCmdResult(nil, nil) })
		return redis.NewCmdResult(nil, io.ErrUnexpectedEOF)
	}
	return f.gate.EvalSha(ctx, sha1, keys, args...)
}

// Wait and WaitN coalesce too: 40 waiters in 2 processes on a real Redis
// all pass, at the limit's pace, never over it.
func TestCoalescedWait(t *testing.T) {
	addr := redisserver.New(t).Addr
	key := fmt.Sprintf("wait-%d", time.Now().UnixNano())
	limit := ratelimit.PerSecond(100).WithBurst(10)
	var wg sync.WaitGroup
	start := time.Now()
	var passed atomic.Int64
	for p := 0; p < 2; p++ {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		l, err := ratelimit.New(rdb, "wait", limit)
		if err != nil {
			t.Fatal(err)
		}
		for w := 0; w < 20; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if err := l.WaitN(wctx, key, 2); err != nil {
					t.Error(err)
					return
				}
				passed.Add(2)
			}()
		}
	}
	wg.Wait()
	// 80 requests, 10 at once and 100 a second: at least 700 ms.
	if took := time.Since(start); passed.Load() != 80 || took < 690*time.Millisecond {
		t.Errorf("%d passed in %v, want 80 in 700 ms or more", passed.Load(), took)
	}
}
