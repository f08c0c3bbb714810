package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
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
	for _, alg := range ratelimit.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			f := newFrozen(t)
			l, _ := ratelimit.New(f.rdb, "reserve", ratelimit.PerMinute(10), ratelimit.WithAlgorithm(alg),
				ratelimit.WithClock(func() time.Time { return f.Now }))
			r, _ := l.Reserve(ctx, "k", 5)
			if !r.Decision.Allowed {
				t.Fatalf("Reserve(5) of 10: %v, want allowed", r.Decision)
			}
			if err := l.Reset(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if err := r.Cancel(ctx); err != nil {
				t.Fatal(err)
			}
			if n := f.rdb.Exists(ctx, l.RedisKey("k")).Val(); n != 0 {
				t.Errorf("a refund after Reset wrote state (%d keys)", n)
			}
		})
	}
}

// What is still refused, every bundled algorithm settling: a cost out of
// 1 to 1e9, before Redis, by every rule; a Rule of the user's own whose
// Reserve fails, its error as it is through Select and All; a settle out
// of range or past its window.
func TestReserveRefuses(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	gcra, _ := ratelimit.New(f.rdb, "gcra", ratelimit.PerMinute(5))
	window := newLimiter(t, f.rdb, ratelimit.FixedWindow)
	both, _ := ratelimit.All(gcra, window)
	atom, err := ratelimit.Atomic(gcra, newNamed(t, f.rdb, "gcra2", ratelimit.GCRA))
	if err != nil {
		t.Fatal(err)
	}
	chosen := ratelimit.Select(func(context.Context, string) (ratelimit.Rule, error) { return window, nil })
	rules := map[string]ratelimit.Rule{"Limiter": gcra, "All": both, "Atomic": atom, "Select": chosen, "Unlimited": ratelimit.Unlimited}
	for name, rule := range rules {
		for _, n := range []int64{0, -1, 1e9 + 1} {
			if _, err := rule.Reserve(ctx, "k", n); !errors.Is(err, ratelimit.ErrInvalid) {
				t.Errorf("%s: Reserve of %d = %v, want ErrInvalid", name, n, err)
			}
		}
	}
	if n := f.rdb.DBSize(ctx).Val(); n != 0 {
		t.Errorf("refused reservations wrote %d keys", n)
	}

	errRefused := errors.New("no reservations here")
	own := refusingRule{Rule: gcra, err: errRefused}
	mine := ratelimit.Select(func(context.Context, string) (ratelimit.Rule, error) { return own, nil })
	withOwn, _ := ratelimit.All(newNamed(t, f.rdb, "other", ratelimit.GCRA), own)
	for name, rule := range map[string]ratelimit.Rule{"Select": mine, "All": withOwn} {
		if _, err := rule.Reserve(ctx, "k", 1); !errors.Is(err, errRefused) {
			t.Errorf("%s of a rule whose Reserve fails: %v, want its error", name, err)
		}
	}

	if _, err := ratelimit.New(f.rdb, "w", ratelimit.PerMinute(5), ratelimit.WithSettleWithin(0)); !errors.Is(err, ratelimit.ErrInvalid) {
		t.Errorf("WithSettleWithin(0): %v, want ErrInvalid", err)
	}
	l, _ := ratelimit.New(f.rdb, "w", ratelimit.PerMinute(5), ratelimit.WithSettleWithin(time.Millisecond))
	r, _ := l.Reserve(ctx, "k", 2)
	for _, m := range []int64{-1, 1e9 + 1} {
		if err := r.Settle(ctx, m); !errors.Is(err, ratelimit.ErrInvalid) {
			t.Errorf("Settle(%d): %v, want ErrInvalid", m, err)
		}
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
// counting after the check, as httplimit.WithCountIf did, let 47-48 of
// 200 through.)
func TestBruteForceReserve(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t), PoolSize: 64})
	defer rdb.Close()
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		opts []ratelimit.Option
	}{
		{"limit", nil},
		// The lockout counts through the reservation: the fifth starts it.
		{"lockout", []ratelimit.Option{ratelimit.WithAlgorithm(ratelimit.GCRA), ratelimit.WithLockout(time.Hour)}},
		// The lockout's own default: it counts in a sliding log.
		{"lockout-log", []ratelimit.Option{ratelimit.WithLockout(time.Hour)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logins, err := ratelimit.New(rdb, "logins-"+tt.name, ratelimit.Per(5, 15*time.Minute), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			for run := 0; run < 10; run++ {
				user := "alice"
				if err := logins.Reset(ctx, user); err != nil {
					t.Fatal(err)
				}
				var checked, started atomic.Int64
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
						if r.Decision.LockedOut {
							started.Add(1)
						}
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
				if locked := tt.opts != nil; d.LockedOut != locked || started.Load() != map[bool]int64{true: 1}[locked] {
					t.Fatalf("run %d: locked out %v, started by %d allowed attempts; want %v, by the fifth alone", run, d.LockedOut, started.Load(), locked)
				}
			}
		})
	}
}

// The LLM recipe (Example_llmTokens) on a real Redis: 100 requests at
// once, each reserving 1 of 20 requests a day and its max_tokens, 1 000,
// of 5 000 tokens a minute, then settling at the 200 it used. A request
// the tokens deny gives its day's request back, so the day counts exactly
// the requests that ran and the tokens exactly what they used. The
// caller's clock stands still, so that nothing refills meanwhile, a second
// ahead of the server's (a new key is judged at the later of the two).
func TestLLMTokensReserve(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t), PoolSize: 64})
	defer rdb.Close()
	ctx := context.Background()
	for run := 0; run < 5; run++ {
		now := time.Now().Add(time.Second)
		clock := ratelimit.WithClock(func() time.Time { return now })
		tokens, err := ratelimit.New(rdb, "tokens", ratelimit.PerMinute(5_000), clock)
		if err != nil {
			t.Fatal(err)
		}
		requests, err := ratelimit.New(rdb, "requests", ratelimit.Per(20, 24*time.Hour), clock)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("api-key-%d", run)
		var ran atomic.Int64
		var wg sync.WaitGroup
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, err := requests.Reserve(ctx, key, 1)
				if err != nil || !req.Decision.Allowed {
					if err != nil {
						t.Error(err)
					}
					return
				}
				tok, err := tokens.Reserve(ctx, key, 1_000)
				if err != nil || !tok.Decision.Allowed {
					if err := req.Cancel(ctx); err != nil {
						t.Error(err)
					}
					return
				}
				ran.Add(1)
				if err := tok.Settle(ctx, 200); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		n := ran.Load()
		if n < 5 || n > 20 {
			t.Fatalf("run %d: %d of 100 requests ran, want 5 to 20 (5 000 tokens hold 5 reservations of 1 000; 20 a day)", run, n)
		}
		if d, _ := requests.Peek(ctx, key); d.Remaining != 20-n {
			t.Errorf("run %d: %d requests ran, %d of 20 left today; want %d (the denied gave theirs back)", run, n, d.Remaining, 20-n)
		}
		if d, _ := tokens.Peek(ctx, key); d.Remaining != 5_000-200*n {
			t.Errorf("run %d: %d requests used 200 tokens each, %d of 5000 left; want %d", run, n, d.Remaining, 5_000-200*n)
		}
	}
}

// Every algorithm gives back and charges alike: a refund
// frees what it gives back, a charge past the limit leaves the key in
// debt. The limiter's clock is the frozen server's: the sliding windows'
// Reserve counts on the caller's clock.
func TestReserveSettleEveryAlgorithm(t *testing.T) {
	ctx := context.Background()
	// The wait for one more after the charge, from T0 (a window's start):
	// the buckets pay 22 over at 10 a minute; the counter's 32 weigh 9 or
	// less 43.125 s into the next window; the log's 32 entries leave at 60 s.
	debt := map[ratelimit.Algorithm]time.Duration{
		ratelimit.GCRA: 2 * time.Minute, ratelimit.TokenBucket: 2 * time.Minute, ratelimit.TokenBucketInterval: 2 * time.Minute,
		ratelimit.LeakyBucket: 2 * time.Minute, ratelimit.SlidingWindowCounter: 103125 * time.Millisecond, ratelimit.SlidingWindowLog: time.Minute,
	}
	for _, alg := range ratelimit.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			f := newFrozen(t)
			l, err := ratelimit.New(f.rdb, "reserve", ratelimit.PerMinute(10), ratelimit.WithAlgorithm(alg),
				ratelimit.WithClock(func() time.Time { return f.Now }))
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
			if d.RetryAfter < debt[alg] {
				t.Errorf("in debt of 22: RetryAfter %v, want at least %v", d.RetryAfter, debt[alg])
			}
		})
	}
}

// On a real Redis, reservations and settles leave every algorithm's state
// where a sequential model puts it: at one instant nothing drains, so the
// model is the units counted (used), which a Reserve of n adds when used+n
// fits the limit and a Settle of m moves by m−n (into debt past the
// limit). First in turn, checking each decision and the Peek after it, then
// from 8 goroutines at once, checking the sum. The caller clock stands 30 s
// ahead of the server's TIME (the scripts take 60 s), so that every call is
// judged at it for as long as the test can take, the instant a window
// settles by (a caller behind TIME on an empty key is judged at TIME, and
// a refund finds it there: windowrefund_test.go).
func TestReserveSettleMatchesModelOnRedis(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(t), PoolSize: 16})
	defer rdb.Close()
	ctx := context.Background()
	const limit = 100
	at := time.Now().Add(30 * time.Second)
	clock := ratelimit.WithClock(func() time.Time { return at })
	for _, alg := range ratelimit.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			l, err := ratelimit.New(rdb, "model-"+alg.String(), ratelimit.PerMinute(limit), ratelimit.WithAlgorithm(alg), clock)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, used int64) {
				t.Helper()
				d, err := l.Peek(ctx, "seq")
				if err != nil {
					t.Fatal(err)
				}
				if want := max(0, limit-used); d.Remaining != want || d.Allowed != (used+1 <= limit) {
					t.Fatalf("%s: Peek %v, want %d left (%d used)", what, d, want, used)
				}
			}
			rng := rand.New(rand.NewSource(int64(alg)))
			var used int64
			var open []*ratelimit.Reservation
			var ns []int64
			for i := 0; i < 60; i++ {
				if len(open) == 0 || rng.Intn(2) == 0 {
					n := 1 + rng.Int63n(30)
					r, err := l.Reserve(ctx, "seq", n)
					if err != nil {
						t.Fatal(err)
					}
					if r.Decision.Allowed != (used+n <= limit) {
						t.Fatalf("step %d: Reserve(%d) with %d used: %v", i, n, used, r.Decision)
					}
					if r.Decision.Allowed {
						used += n
						open, ns = append(open, r), append(ns, n)
					}
					check(fmt.Sprintf("step %d: Reserve(%d)", i, n), used)
					continue
				}
				j := rng.Intn(len(open))
				m := rng.Int63n(2 * ns[j])
				if err := open[j].Settle(ctx, m); err != nil {
					t.Fatal(err)
				}
				used += m - ns[j]
				check(fmt.Sprintf("step %d: Settle(%d) of %d", i, m, ns[j]), used)
				open, ns = append(open[:j], open[j+1:]...), append(ns[:j], ns[j+1:]...)
			}

			// At once: whatever the order, the units counted are the final
			// costs of the reservations that passed.
			var sum atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func(seed int64) {
					defer wg.Done()
					rng := rand.New(rand.NewSource(seed))
					for i := 0; i < 10; i++ {
						n := 1 + rng.Int63n(5)
						r, err := l.Reserve(ctx, "many", n)
						if err != nil {
							t.Error(err)
							return
						}
						if !r.Decision.Allowed {
							continue
						}
						m := rng.Int63n(2 * n)
						if err := r.Settle(ctx, m); err != nil {
							t.Error(err)
							return
						}
						sum.Add(m)
					}
				}(int64(g))
			}
			wg.Wait()
			d, err := l.Peek(ctx, "many")
			if err != nil {
				t.Fatal(err)
			}
			if want := max(0, limit-sum.Load()); d.Remaining != want {
				t.Errorf("after settles at once: %d left, want %d (%d counted)", d.Remaining, want, sum.Load())
			}
		})
	}
}

// A sliding window log holds at most 10000 entries: a charge that would
// pass that is refused with ErrInvalid, nothing changes, and the
// reservation stands at n.
func TestReserveSettleLogBound(t *testing.T) {
	ctx := context.Background()
	f := newFrozen(t)
	l, err := ratelimit.New(f.rdb, "reserve", ratelimit.PerMinute(10), ratelimit.WithAlgorithm(ratelimit.SlidingWindowLog),
		ratelimit.WithClock(func() time.Time { return f.Now }))
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Reserve(ctx, "k", 2)
	if err != nil || !r.Decision.Allowed {
		t.Fatalf("Reserve(2): %v, %v", r.Decision, err)
	}
	if err := r.Settle(ctx, 10001); !errors.Is(err, ratelimit.ErrInvalid) || !strings.Contains(err.Error(), "10000") {
		t.Fatalf("Settle(10001) of 2: %v, want ErrInvalid naming the 10000 entries", err)
	}
	if d, _ := l.Peek(ctx, "k"); d.Remaining != 8 {
		t.Errorf("after a refused charge: %d left, want 8 (the reservation stands)", d.Remaining)
	}
}

// refusingRule is a Rule of the user's own whose Reserve fails with err.
type refusingRule struct {
	ratelimit.Rule
	err error
}

func (r refusingRule) Reserve(context.Context, string, int64) (*ratelimit.Reservation, error) {
	return nil, r.err
}
