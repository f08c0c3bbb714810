package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
)

// Reserve counts as AllowN does; Settle gives back or counts the
// difference, once; a denied reservation holds nothing.
func TestReserveSettle(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	l, err := ratelimit.New(f.rdb, "reserve", ratelimit.PerMinute(10))
	if err != nil {
		t.Fatal(err)
	}
	remaining := func() int64 {
		t.Helper()
		d, err := l.Peek(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		return d.Remaining
	}

	r, err := l.Reserve(ctx, "k", 6)
	if err != nil || !r.Decision.Allowed || r.Decision.Remaining != 4 {
		t.Fatalf("Reserve(6) of 10 = %v, %v; want allowed, 4 left", r.Decision, err)
	}
	if err := r.Settle(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got := remaining(); got != 8 {
		t.Errorf("after Settle(2) of a reservation of 6: %d left, want 8", got)
	}
	if err := r.Settle(ctx, 2); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("a second Settle: %v, want ErrInvalid", err)
	}
	if err := r.Cancel(ctx); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("a Cancel after Settle: %v, want ErrInvalid", err)
	}

	// Cancel gives everything back, never more than a full limit.
	r, _ = l.Reserve(ctx, "k", 8)
	if err := r.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if got := remaining(); got != 8 {
		t.Errorf("after Cancel of a reservation of 8: %d left, want 8", got)
	}
	big, _ := l.Reserve(ctx, "k", 8)
	f.advance(time.Minute) // full again meanwhile
	if err := big.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if got := remaining(); got != 10 {
		t.Errorf("a refund to a full limit: %d left, want 10 (never more than the limit)", got)
	}

	// A denied reservation holds nothing: settling it changes nothing.
	l.AllowN(ctx, "k", 10)
	denied, err := l.Reserve(ctx, "k", 1)
	if err != nil || denied.Decision.Allowed {
		t.Fatalf("Reserve on a used-up limit = %v, %v; want denied", denied.Decision, err)
	}
	if err := denied.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if got := remaining(); got != 0 {
		t.Errorf("after cancelling a denied reservation: %d left, want 0", got)
	}

	// Settle above the reservation counts the rest, into debt: the limit
	// is used up for longer than a full limit takes.
	f.advance(time.Minute)
	r, _ = l.Reserve(ctx, "k", 1)
	if err := r.Settle(ctx, 25); err != nil {
		t.Fatal(err)
	}
	d, err := l.Allow(ctx, "k")
	if err != nil || d.Allowed {
		t.Fatalf("after a charge of 25 on a limit of 10: %v, %v; want denied", d, err)
	}
	// 25 units at 6 s each from now, less the 10 a full limit holds: the
	// wait for one more is 15 intervals plus one, 96 s.
	if want := 96 * time.Second; d.RetryAfter != want {
		t.Errorf("in debt: RetryAfter %v, want %v", d.RetryAfter, want)
	}
	f.advance(d.RetryAfter)
	if d, _ := l.Allow(ctx, "k"); !d.Allowed {
		t.Errorf("after the debt's wait: %v, want allowed", d)
	}
}

// A reservation made before a Reset gives back nothing after it: the key
// holds no state, and none is made.
func TestReserveSettleAfterReset(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	l, _ := ratelimit.New(f.rdb, "reserve", ratelimit.PerMinute(10))
	r, _ := l.Reserve(ctx, "k", 5)
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if err := r.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.rdb.Exists(ctx, l.RedisKey("k")).Val(); n != 0 {
		t.Errorf("a refund after Reset wrote state (%d keys)", n)
	}
}

// Reserve refuses, before Redis, a limiter that cannot settle; Settle
// refuses a cost out of range and a reservation past its window.
func TestReserveRefuses(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	for _, alg := range ratelimit.Algorithms() {
		if alg == ratelimit.GCRA || alg == ratelimit.TokenBucket || alg == ratelimit.TokenBucketInterval || alg == ratelimit.FixedWindow {
			continue
		}
		l := newLimiter(t, f.rdb, alg)
		if _, err := l.Reserve(ctx, "k", 1); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("%v: Reserve = %v, want ErrInvalid", alg, err)
		}
	}
	locked, _ := ratelimit.New(f.rdb, "locked", ratelimit.PerMinute(5), ratelimit.WithAlgorithm(ratelimit.GCRA), ratelimit.WithLockout(time.Minute))
	if _, err := locked.Reserve(ctx, "k", 1); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("with a lockout: Reserve = %v, want ErrInvalid", err)
	}
	if n := f.rdb.DBSize(ctx).Val(); n != 0 {
		t.Errorf("refused reservations wrote %d keys", n)
	}
	if _, err := ratelimit.New(f.rdb, "w", ratelimit.PerMinute(5), ratelimit.WithSettleWithin(0)); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("WithSettleWithin(0): %v, want ErrInvalid", err)
	}
	l, _ := ratelimit.New(f.rdb, "w", ratelimit.PerMinute(5), ratelimit.WithSettleWithin(time.Millisecond))
	r, _ := l.Reserve(ctx, "k", 2)
	if err := r.Settle(ctx, -1); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("Settle(-1): %v, want ErrInvalid", err)
	}
	time.Sleep(5 * time.Millisecond)
	if err := r.Cancel(ctx); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("a Cancel past the settle window: %v, want ErrInvalid", err)
	}
	if d, _ := l.Peek(ctx, "k"); d.Remaining != 3 {
		t.Errorf("past the window the reservation stands: %d left, want 3", d.Remaining)
	}
}

// "At most 5 failed logins in 15 minutes", the brute-force recipe: 200
// wrong passwords for one user at once, on a real Redis. Each attempt
// reserves 1 before the password check and gives it back when the
// password is right (TestReserveSettle), so at most 5 reach the check. (Peeking first and
// counting after the check, as httplimit.WithCountIf does, let 47-48 of
// 200 through.)
func TestBruteForceReserve(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t), PoolSize: 64})
	defer rdb.Close()
	ctx := context.Background()
	for run := 0; run < 10; run++ {
		logins, err := ratelimit.New(rdb, "logins", ratelimit.Per(5, 15*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		user := "alice"
		if err := logins.Reset(ctx, user); err != nil {
			t.Fatal(err)
		}
		var checked atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < 200; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := logins.Reserve(ctx, user, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if !r.Decision.Allowed {
					return // 429
				}
				checked.Add(1) // the password is wrong: the reservation stands
			}()
		}
		wg.Wait()
		if n := checked.Load(); n > 5 {
			t.Fatalf("run %d: %d of 200 wrong passwords reached the password check, want at most 5", run, n)
		}
		d, _ := logins.Peek(ctx, user)
		if d.Remaining != 0 {
			t.Fatalf("run %d: after the attack %d attempts are left, want 0", run, d.Remaining)
		}
	}
}

// Every algorithm that settles gives back and charges alike: a refund
// frees what it gives back, a charge past the limit leaves the key in
// debt.
func TestReserveSettleEveryAlgorithm(t *testing.T) {
	ctx := context.Background()
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.TokenBucket, ratelimit.TokenBucketInterval, ratelimit.FixedWindow} {
		t.Run(alg.String(), func(t *testing.T) {
			f := newFrozen(t)
			// A fixed window's reservation counts on this process's clock
			// (the window that counted it is the one it settles in): here
			// the frozen server's.
			l, err := ratelimit.New(f.rdb, "reserve", ratelimit.PerMinute(10), ratelimit.WithAlgorithm(alg), ratelimit.WithClock(func() time.Time { return f.Now }))
			if err != nil {
				t.Fatal(err)
			}
			r, err := l.Reserve(ctx, "k", 6)
			if err != nil || !r.Decision.Allowed || r.Decision.Remaining != 4 {
				t.Fatalf("Reserve(6) of 10 = %v, %v; want allowed, 4 left", r.Decision, err)
			}
			if err := r.Settle(ctx, 2); err != nil {
				t.Fatal(err)
			}
			if d, _ := l.Peek(ctx, "k"); d.Remaining != 8 {
				t.Errorf("after Settle(2) of 6: %d left, want 8", d.Remaining)
			}
			r, _ = l.Reserve(ctx, "k", 1)
			if err := r.Settle(ctx, 30); err != nil {
				t.Fatal(err)
			}
			d, err := l.Allow(ctx, "k")
			if err != nil || d.Allowed || d.Remaining != 0 {
				t.Errorf("after a charge of 30 with 8 left: %v, %v; want denied, in debt", d, err)
			}
			if alg == ratelimit.FixedWindow {
				// Over the limit until the window (T0's minute) ends, then
				// none of it is left.
				if d.RetryAfter != time.Minute {
					t.Errorf("a fixed window charged past its limit: RetryAfter %v, want the 1m to its end", d.RetryAfter)
				}
				f.advance(time.Minute)
				if d, _ := l.Peek(ctx, "k"); d.Remaining != 10 {
					t.Errorf("the next window: %d left, want 10", d.Remaining)
				}
				return
			}
			// 22 over the limit, paid at 10 a minute: more than two minutes.
			if d.RetryAfter < 2*time.Minute {
				t.Errorf("in debt of 22 at 10 a minute: RetryAfter %v, want more than 2m", d.RetryAfter)
			}
		})
	}
}
