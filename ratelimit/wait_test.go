package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

// Many waiters on one key: each passes once, and together they never pass
// more than the limit. Every admission is Redis's, so the proof is in the
// time it takes: 40 requests through a burst of 5 and 50 a second cannot
// all pass in less than 35/50 s, however the machine schedules them (load
// only makes it slower).
func TestWaitManyWaitersNeverOverAdmit(t *testing.T) {
	m := miniredis.RunT(t) // TIME follows the wall clock
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	var calls atomic.Int64
	l, err := ratelimit.New(rdb, "waiters", ratelimit.Limit{Rate: 50, Period: time.Second, Burst: 5},
		ratelimit.WithHook(func(context.Context, ratelimit.Event) { calls.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 40
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errs <- l.Wait(ctx, "hot")
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if min := time.Duration(waiters-5) * time.Second / 50; took < min {
		t.Errorf("%d waiters passed in %v, faster than the limit allows (%v)", waiters, took, min)
	}
	// Waiters queue for their turn: one asks Redis at a time, not the
	// whole herd once per slot (which cost some 10 decisions per waiter
	// here before the queue). A first try each, a few retries each.
	t.Logf("%d waiters in %v, %d decisions", waiters, took, calls.Load())
	if n := calls.Load(); n > 5*waiters {
		t.Errorf("%d decisions for %d waiters: the waiters stampede", n, waiters)
	}
}

// A wait that would pass the context's deadline returns at once, counting
// nothing; so does a cost that can never pass.
func TestWaitRefusesWhatItCannotWaitFor(t *testing.T) {
	f := newFrozen(t)
	l, _ := ratelimit.New(f.rdb, "slow", ratelimit.Per(1, time.Minute).WithBurst(2))
	if err := l.WaitN(ctx, "k", 2); err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	start := time.Now()
	err := l.Wait(c, "k")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 500*time.Millisecond {
		t.Errorf("a wait of a minute with a second left: %v after %v, want DeadlineExceeded at once", err, time.Since(start))
	}
	if err := l.WaitN(ctx, "k", 3); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("a cost above the burst: %v, want ErrInvalid", err)
	}
	if d, _ := l.Peek(ctx, "k"); d.Remaining != 0 || d.RetryAfter != time.Minute {
		t.Errorf("the refused waits counted: %v", d)
	}
	// A cancelled wait ends with the context's error.
	c, cancel = context.WithCancel(ctx)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if err := l.Wait(c, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait: %v", err)
	}
	// A limiter that fails closed has nothing to wait for.
	down, _ := ratelimit.New(downClient(t), "down", ratelimit.PerSecond(1), ratelimit.WithFallback(ratelimit.FailClosed))
	if err := down.Wait(ctx, "k"); !errors.Is(err, ratelimit.ErrUnavailable) {
		t.Errorf("fail closed: %v, want ErrUnavailable", err)
	}
}

// The frozen clock moves while a waiter sleeps: it passes as soon as its
// RetryAfter is over.
func TestWaitPassesAfterRetryAfter(t *testing.T) {
	f := newFrozen(t)
	now := t0
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l, _ := ratelimit.New(f.rdb, "w", ratelimit.Per(1, 30*time.Millisecond), ratelimit.WithClock(clock))
	l.Allow(ctx, "k")
	done := make(chan error)
	go func() { done <- l.Wait(ctx, "k") }()
	select {
	case err := <-done:
		t.Fatalf("passed before its wait: %v", err)
	case <-time.After(10 * time.Millisecond):
	}
	mu.Lock()
	now = now.Add(30 * time.Millisecond)
	mu.Unlock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after its RetryAfter")
	}
}

// A waiter that queued behind another sleeps, once it has its turn, only
// what is left of the wait its first try was told, not all of it again:
// two waiters on a full sliding log of 2 per 2 s both pass when the log's
// two entries leave, 2 s on, where the second slept 2 s more before (and
// a sliding log of N waiters took N windows).
func TestWaitSleepsWhatIsLeftOfItsWait(t *testing.T) {
	m := miniredis.RunT(t) // TIME follows the wall clock
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	const window = 2 * time.Second
	l, err := ratelimit.New(rdb, "turns", ratelimit.Limit{Rate: 2, Period: window, Burst: 2},
		ratelimit.WithAlgorithm(ratelimit.SlidingWindowLog))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed {
			t.Fatalf("filling the log: %v, %v", d, err)
		}
	}
	start := time.Now()
	took := make(chan time.Duration, 2)
	for range 2 {
		go func() {
			if err := l.Wait(ctx, "k"); err != nil {
				t.Error(err)
			}
			took <- time.Since(start)
		}()
	}
	for range 2 {
		// Both pass once the entries leave, at 2 s (jitter adds at most
		// an eighth of a wait); the second waiter used to pass at 4 s.
		if d := <-took; d < window-100*time.Millisecond || d > window+window/2 {
			t.Errorf("a waiter passed after %v, want about %v", d, window)
		}
	}
}
