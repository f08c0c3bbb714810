package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
)

// sent is how many commands h has seen, single or pipelined.
func (h *countingHook) sent() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.single + h.cmds
}

// A cached denial is served, with no command sent, exactly until 1 ms
// before the RetryAfter Redis gave (RetryAfter is whole ms rounded up, so
// Redis may admit within that last ms), counting RetryAfter down as the
// (fake) clock moves; then Redis decides again, and at RetryAfter admits.
// It answers the cost it was denied for (a peek is a cost of 1) and no
// other, for every algorithm.
func TestDenyCacheServesUntilItsDeadline(t *testing.T) {
	for _, alg := range ratelimit.Algorithms() {
		for _, n := range []int64{1, 3} {
			t.Run(fmt.Sprintf("%v/n=%d", alg, n), func(t *testing.T) {
				f := newFrozen(t)
				f.advance(123456 * time.Microsecond) // off the window grid
				if err := bindings.LoadAll(ctx, f.rdb); err != nil {
					t.Fatal(err)
				}
				h := &countingHook{}
				f.rdb.AddHook(h)
				l := newLimiter(t, f.rdb, alg, ratelimit.WithDenyCache(100), ratelimit.WithClock(func() time.Time { return f.Now }))
				var denied ratelimit.Decision
				for i := 0; ; i++ {
					d, err := l.AllowN(ctx, "k", n)
					if err != nil {
						t.Fatal(err)
					}
					if d.Cached {
						t.Fatalf("call %d answered by the cache before any denial: %v", i, d)
					}
					if !d.Allowed {
						denied = d
						break
					}
				}
				r := denied.RetryAfter
				if r <= time.Millisecond || r == ratelimit.Never {
					t.Fatalf("denied with RetryAfter %v: nothing to cache", r)
				}
				start := f.Now
				for _, at := range []time.Duration{0, time.Microsecond, r / 3, r - time.Millisecond - time.Nanosecond} {
					f.Now = start.Add(at)
					before := h.sent()
					for i := 0; i < 2; i++ {
						d, err := l.AllowN(ctx, "k", n)
						if err != nil || !d.Cached || d.Allowed || d.RetryAfter != ceilMs(r-at) || d.Remaining != denied.Remaining || d.Limit != denied.Limit {
							t.Errorf("at +%v: %+v, %v; want a cached denial, RetryAfter %v", at, d, err, ceilMs(r-at))
						}
						if want := ceilMs(max(denied.ResetAfter-at, 0)); d.ResetAfter != want {
							t.Errorf("at +%v: ResetAfter %v, want %v", at, d.ResetAfter, want)
						}
					}
					if n == 1 {
						if d, _ := l.Peek(ctx, "k"); !d.Cached {
							t.Errorf("at +%v: a peek after a denial of cost 1 was not cached: %v", at, d)
						}
					}
					if got := h.sent(); got != before {
						t.Errorf("at +%v: %d commands sent for cached denials", at, got-before)
					}
				}
				if n > 1 {
					// Other costs ask Redis: a peek (and a larger cost, which
					// is denied too, and leaves the state alone).
					before := h.sent()
					if d, _ := l.AllowN(ctx, "k", n+1); d.Cached || d.Allowed {
						t.Errorf("a larger cost: %v, want Redis's denial", d)
					}
					if d, _ := l.Peek(ctx, "k"); d.Cached {
						t.Errorf("a peek after a denial of cost %d was answered by the cache: %v", n, d)
					}
					if h.sent() != before+2 {
						t.Errorf("two other costs sent %d commands, want 2", h.sent()-before)
					}
				}

				// 1 ms before RetryAfter, Redis decides (and still denies).
				f.advance(start.Add(r - time.Millisecond).Sub(f.Now))
				before := h.sent()
				if d, err := l.AllowN(ctx, "k", n); err != nil || d.Cached || d.Allowed {
					t.Errorf("1 ms before RetryAfter: %v, %v; want Redis's denial", d, err)
				}
				if h.sent() != before+1 {
					t.Errorf("1 ms before RetryAfter, %d commands sent, want 1", h.sent()-before)
				}
				f.advance(time.Millisecond)
				if d, err := l.AllowN(ctx, "k", n); err != nil || d.Cached || !d.Allowed {
					t.Errorf("at RetryAfter: %v, %v; want Redis's admission", d, err)
				}
			})
		}
	}
}

func ceilMs(d time.Duration) time.Duration {
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The cache never answers what Redis would not: after every cached
// denial, the same request sent to Redis through a limiter without a cache
// (same name, so the same state) is denied too, with a RetryAfter no
// longer than the cached one. Denials change nothing in Redis, so the probe
// leaves the state alone exactly when the cache was right.
func TestDenyCacheAgreesWithRedis(t *testing.T) {
	for _, alg := range ratelimit.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			f := newFrozen(t)
			clock := ratelimit.WithClock(func() time.Time { return f.Now })
			limit := ratelimit.PerSecond(5).WithBurst(5)
			opts := []ratelimit.Option{ratelimit.WithAlgorithm(alg), clock}
			cached, err := ratelimit.New(f.rdb, "test", limit, append(opts, ratelimit.WithDenyCache(10))...)
			if err != nil {
				t.Fatal(err)
			}
			plain, _ := ratelimit.New(f.rdb, "test", limit, opts...)
			rng := rand.New(rand.NewPCG(1, uint64(alg)))
			hits := 0
			for i := 0; i < 3000; i++ {
				f.advance(time.Duration(rng.IntN(60_000)) * time.Microsecond)
				key := fmt.Sprintf("k%d", rng.IntN(3))
				cost := int64(rng.IntN(4)) // 0 peeks
				var d ratelimit.Decision
				if cost == 0 {
					d, err = cached.Peek(ctx, key)
				} else {
					d, err = cached.AllowN(ctx, key, cost)
				}
				if err != nil {
					t.Fatal(err)
				}
				if !d.Cached {
					continue
				}
				hits++
				var redis ratelimit.Decision
				if cost == 0 {
					redis, err = plain.Peek(ctx, key)
				} else {
					redis, err = plain.AllowN(ctx, key, cost)
				}
				if err != nil || redis.Allowed || redis.RetryAfter > d.RetryAfter {
					t.Fatalf("step %d, %s cost %d: the cache said %v, Redis %v, %v", i, key, cost, d, redis, err)
				}
			}
			if hits < 100 {
				t.Errorf("only %d cached answers in 3000 steps: the test tests little", hits)
			}
		})
	}
}

// With the server's clock the cache measures the wait on this process's
// monotonic clock from before the request was sent: the RetryAfter it
// reports counts down from Redis's and never exceeds it.
func TestDenyCacheServerClock(t *testing.T) {
	f := newFrozen(t)
	if err := bindings.LoadAll(ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	h := &countingHook{}
	f.rdb.AddHook(h)
	l, err := ratelimit.New(f.rdb, "test", ratelimit.Per(2, time.Hour), ratelimit.WithDenyCache(10))
	if err != nil {
		t.Fatal(err)
	}
	l.AllowN(ctx, "k", 2)
	denied, _ := l.Allow(ctx, "k")
	if denied.Allowed || denied.Cached || denied.RetryAfter != 30*time.Minute {
		t.Fatalf("%v", denied)
	}
	before := h.sent()
	d, err := l.Allow(ctx, "k")
	if err != nil || !d.Cached || d.Allowed || d.RetryAfter > denied.RetryAfter || d.RetryAfter < denied.RetryAfter-time.Minute {
		t.Errorf("%v, %v; want a cached denial, RetryAfter just under %v", d, err, denied.RetryAfter)
	}
	if h.sent() != before {
		t.Errorf("a cached denial sent %d commands", h.sent()-before)
	}
	if !strings.HasPrefix(d.String(), "denied by the deny cache, 0 of 2 left, retry in ") {
		t.Errorf("String() = %q", d.String())
	}
}

// Reset on the limiter drops its entry: the next request asks Redis and
// passes. A limiter of the same name elsewhere cannot see that Reset (the
// documented limit of the cache) until its cached RetryAfter ends.
func TestDenyCacheReset(t *testing.T) {
	f := newFrozen(t)
	clock := ratelimit.WithClock(func() time.Time { return f.Now })
	a := newLimiter(t, f.rdb, ratelimit.GCRA, ratelimit.WithDenyCache(10), clock)
	b := newLimiter(t, f.rdb, ratelimit.GCRA, ratelimit.WithDenyCache(10), clock)
	a.AllowN(ctx, "k", 10)
	for _, l := range []*ratelimit.Limiter{a, b} {
		l.Allow(ctx, "k")
		if d, _ := l.Allow(ctx, "k"); !d.Cached {
			t.Fatalf("not cached: %v", d)
		}
	}
	if err := a.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if d, _ := a.Allow(ctx, "k"); d.Cached || !d.Allowed || d.Remaining != 9 {
		t.Errorf("after Reset: %v, want Redis's admission with 9 left", d)
	}
	if d, _ := b.Allow(ctx, "k"); !d.Cached {
		t.Errorf("another limiter saw the Reset: %v", d)
	}
}

// What is not a finite denial from Redis is never cached: an admission, a
// cost that can never pass (RetryAfter Never), a fallback's denial,
// an error.
func TestDenyCacheOnlyCachesDenials(t *testing.T) {
	f := newFrozen(t)
	if err := bindings.LoadAll(ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	h := &countingHook{}
	f.rdb.AddHook(h)
	l := newLimiter(t, f.rdb, ratelimit.GCRA, ratelimit.WithDenyCache(10))
	for i := 0; i < 3; i++ {
		if d, _ := l.AllowN(ctx, "never", 11); d.Cached || d.RetryAfter != ratelimit.Never {
			t.Errorf("cost above the burst: %v", d)
		}
		if d, _ := l.Allow(ctx, "ok"); d.Cached || !d.Allowed {
			t.Errorf("an admission: %v", d)
		}
	}
	if h.sent() != 6 {
		t.Errorf("%d commands for 6 uncached decisions", h.sent())
	}

	f.Lpush(l.RedisKey("foreign"), "x")
	for i := 0; i < 2; i++ {
		if d, err := l.Allow(ctx, "foreign"); err == nil || d.Cached {
			t.Errorf("foreign data: %v, %v", d, err)
		}
	}

	down := newLimiter(t, downClient(t), ratelimit.GCRA, ratelimit.WithDenyCache(10), ratelimit.WithFallback(ratelimit.FailClosed))
	for i := 0; i < 2; i++ {
		if d, err := down.Allow(ctx, "k"); err != nil || d.Cached || d.Fallback != ratelimit.FailClosed {
			t.Errorf("fail-closed: %v, %v", d, err)
		}
	}

	if _, err := ratelimit.New(f.rdb, "t", ratelimit.PerSecond(1), ratelimit.WithDenyCache(-1)); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("WithDenyCache(-1): %v", err)
	}
}

// In All a limiter whose cache holds the key's denial is answered
// from it and its call is not sent; the others still go in one pipeline.
func TestDenyCacheAll(t *testing.T) {
	f := newFrozen(t)
	if err := bindings.LoadAll(ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	clock := ratelimit.WithClock(func() time.Time { return f.Now })
	perSecond := newLimiter(t, f.rdb, ratelimit.GCRA, ratelimit.WithDenyCache(10), clock)
	perHour, _ := ratelimit.New(f.rdb, "hour", ratelimit.Per(100, time.Hour), ratelimit.WithDenyCache(10), clock)
	both := mustAll(t, perSecond, perHour)
	h := &countingHook{}
	f.rdb.AddHook(h)
	for i := 0; i < 11; i++ {
		both.AllowN(ctx, "k", 1)
	}
	before := h.sent()
	d, err := both.AllowN(ctx, "k", 1)
	ds := d.Parts
	if err != nil || !ds[0].Cached || ds[0].Allowed || ds[1].Cached || !ds[1].Allowed || ds[1].Remaining != 88 {
		t.Errorf("%v, %v; want a cached denial and Redis's admission with 88 left", ds, err)
	}
	if h.sent() != before+1 {
		t.Errorf("%d commands sent, want 1", h.sent()-before)
	}
	// Both cached: nothing is sent at all.
	for i := 0; i < 100; i++ {
		perHour.Allow(ctx, "k")
	}
	before = h.sent()
	d, _ = both.AllowN(ctx, "k", 1)
	ds = d.Parts
	if !ds[0].Cached || !ds[1].Cached || h.sent() != before {
		t.Errorf("%v, %d commands sent, want two cached denials and none", ds, h.sent()-before)
	}
}

// Many goroutines on a few keys, under -race: the
// cache never lets more through than the limit (the server's clock is
// frozen, so exactly the burst passes per key) while it evicts (8 keys, room
// for 4).
func TestDenyCacheConcurrent(t *testing.T) {
	f := newFrozen(t)
	l := newLimiter(t, f.rdb, ratelimit.GCRA, ratelimit.WithDenyCache(4))
	const keys, goroutines, calls = 8, 16, 40
	var allowed [keys]atomic.Int64
	var cachedHits atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				k := (g + i) % keys
				d, err := l.Allow(context.Background(), fmt.Sprintf("k%d", k))
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed[k].Add(1)
				}
				if d.Cached {
					cachedHits.Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	for k := range allowed {
		if got := allowed[k].Load(); got != 10 {
			t.Errorf("k%d: %d allowed, want the burst of 10", k, got)
		}
	}
	if cachedHits.Load() == 0 {
		t.Error("no cached denial in 640 calls on 8 hot keys")
	}
	t.Logf("%d of %d decisions from the cache", cachedHits.Load(), goroutines*calls)
}
