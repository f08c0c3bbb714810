package ratelimit_test

import (
	"testing"
	"time"

	"github.com/redlimit/redlimit/ratelimit"
)

// A lockout starts when a counted request uses up the limit (or is denied),
// holds however the limit refills, shows in Peek, and ends on time; a cost
// that can never pass starts none; Reset lifts it.
func TestWithLockout(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.FixedWindow, ratelimit.SlidingWindowLog} {
		t.Run(alg.String(), func(t *testing.T) {
			f := newFrozen(t)
			l, err := ratelimit.New(f.rdb, "login", ratelimit.PerMinute(3), ratelimit.WithAlgorithm(alg), ratelimit.WithLockout(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := l.AllowN(ctx, "k", 4); d.Allowed || d.RetryAfter != ratelimit.Never {
				t.Fatalf("a cost above the burst: %v", d)
			}
			if d, _ := l.Peek(ctx, "k"); !d.Allowed || d.Remaining != 3 {
				t.Fatalf("a cost that can never pass started a lockout: %v", d)
			}
			l.AllowN(ctx, "k", 2)
			d, _ := l.Allow(ctx, "k") // the last of the limit
			if !d.Allowed || d.Remaining != 0 || d.ResetAfter != time.Hour {
				t.Fatalf("the request that uses up the limit: %v", d)
			}
			f.advance(2 * time.Minute) // the limit is full again
			for _, d := range []ratelimit.Decision{peek(t, l), allow(t, l)} {
				if d.Allowed || d.RetryAfter != 58*time.Minute || d.Remaining != 0 {
					t.Errorf("locked out: %v, want denied for the 58 minutes left", d)
				}
			}
			f.advance(58 * time.Minute)
			if d := allow(t, l); !d.Allowed || d.Remaining != 2 {
				t.Errorf("after the lockout: %v", d)
			}
			l.AllowN(ctx, "k", 2)
			if err := l.Reset(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if d := allow(t, l); !d.Allowed || d.Remaining != 2 {
				t.Errorf("after Reset: %v", d)
			}
		})
	}
}

func peek(t *testing.T, l *ratelimit.Limiter) ratelimit.Decision {
	t.Helper()
	d, err := l.Peek(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func allow(t *testing.T, l *ratelimit.Limiter) ratelimit.Decision {
	t.Helper()
	d, err := l.Allow(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// WithLimit: a limit per call on one state, which carries over when the
// limit changes; a bad limit refused where it is built; a denial cached
// under one limit is not served under another.
func TestWithLimit(t *testing.T) {
	f := newFrozen(t)
	clock := ratelimit.WithClock(func() time.Time { return f.Now })
	free, _ := ratelimit.New(f.rdb, "api", ratelimit.PerMinute(2), ratelimit.WithDenyCache(10), clock)
	pro, err := free.WithLimit(ratelimit.PerMinute(100))
	if err != nil {
		t.Fatal(err)
	}
	if free.RedisKey("k") != pro.RedisKey("k") {
		t.Fatalf("keys %s and %s", free.RedisKey("k"), pro.RedisKey("k"))
	}
	free.AllowN(ctx, "k", 2)
	if d, _ := free.Allow(ctx, "k"); d.Allowed {
		t.Fatalf("free: %v", d)
	}
	if d, _ := free.Allow(ctx, "k"); !d.Cached {
		t.Fatalf("free's second denial is not cached: %v", d)
	}
	d, err := pro.Allow(ctx, "k")
	if err != nil || !d.Allowed || d.Cached || d.Remaining != 97 || d.Limit != ratelimit.PerMinute(100) {
		t.Errorf("upgraded: %v, %v; want the 2 counted under free carried over, 97 left", d, err)
	}
	if _, err := free.WithLimit(ratelimit.Limit{Rate: 1}); err == nil {
		t.Error("a bad limit was accepted")
	}
}
