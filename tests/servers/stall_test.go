package servers

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/internal/testredis"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/inflight"
)

// Issue 15.4: with WithTimeout(50ms) and a 3 s SIGSTOP, Redis counted 1-36
// admissions that callers never received (the calls queued behind the
// stall ran on resume, go-redis's retries among them), and 1.5 s after the
// resume 4-8 of 8 slots were held by leases nobody owned. These tests stop
// a server of their own with SIGSTOP, let 64 callers with a 50 ms timeout
// decide against it, and keep a ledger: every call made during the stall
// was given up before the server ran again, so Redis must record exactly
// the admissions the callers received (none), and 1 s after the resume no
// lease may be held.

const (
	stallCallers = 64
	stallFor     = 3 * time.Second
	stallTimeout = 50 * time.Millisecond
)

// stalled runs fn in each of stallCallers goroutines, over and over, while
// srv is stopped (SIGSTOP) for stallFor, and returns once every caller has
// returned, every call made having been given up (each ends within its
// timeout); the server is then let run again (SIGCONT) and resumed is the
// instant it was.
func stalled(t *testing.T, srv *redisserver.Server, fn func(ctx context.Context)) (resumed time.Time) {
	t.Helper()
	srv.Pause()
	stop := time.Now().Add(stallFor)
	var wg sync.WaitGroup
	for g := 0; g < stallCallers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				fn(context.Background())
			}
		}()
	}
	wg.Wait()
	srv.Resume()
	return time.Now()
}

// drained waits until srv has run every command the closed client c had
// sent: a closed connection is dropped only once Redis has read it to its
// end, so the test's own connection is then the only one left.
func drained(t *testing.T, c *redis.Client, srv *redisserver.Server) *redis.Client {
	t.Helper()
	c.Close()
	fresh := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { fresh.Close() })
	ctx := context.Background()
	until := time.Now().Add(30 * time.Second)
	for {
		info, err := fresh.Info(ctx, "clients").Result()
		if err != nil {
			t.Fatal(err)
		}
		if m := regexp.MustCompile(`connected_clients:(\d+)`).FindStringSubmatch(info); m != nil && m[1] == "1" {
			return fresh
		}
		if time.Now().After(until) {
			list, _ := fresh.ClientList(ctx).Result()
			t.Fatalf("the stalled client's connections are still open 30 s after it closed:\n%s", list)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStallAdmitsNothingAbandoned(t *testing.T) {
	srv := redisserver.New(t)
	// go-redis's defaults otherwise: 3 retries after a read timeout, which
	// resend a call its caller gave up on.
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: stallCallers})
	ctx := context.Background()
	// A fixed window that admits every call, so its count is the ledger of
	// what Redis admitted: 1e9 a window of 1e11 ms (3 years).
	l, err := ratelimit.New(c, "ledger", ratelimit.Limit{Burst: 1e9, Rate: 1e9, Period: 1e11 * time.Millisecond},
		ratelimit.WithAlgorithm(ratelimit.FixedWindow), ratelimit.WithTimeout(stallTimeout), ratelimit.WithFallback(ratelimit.FailClosed))
	if err != nil {
		t.Fatal(err)
	}
	counted := func(c *redis.Client) int64 {
		t.Helper()
		v, err := c.Get(ctx, testredis.Key("rl:ledger:", "k")).Result()
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`^1\d{13}([1-9]\d*)$`).FindStringSubmatch(v)
		if m == nil {
			t.Fatalf("%q is not a fixed window's state", v)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	// Warm the pool, so that calls during the stall go out on open
	// connections and wait in the server's socket buffers: through a
	// limiter of the same name without a timeout, which a loaded machine
	// cannot make fall back.
	warmer, err := ratelimit.New(c, "ledger", ratelimit.Limit{Burst: 1e9, Rate: 1e9, Period: 1e11 * time.Millisecond},
		ratelimit.WithAlgorithm(ratelimit.FixedWindow))
	if err != nil {
		t.Fatal(err)
	}
	var warm sync.WaitGroup
	for g := 0; g < stallCallers; g++ {
		warm.Add(1)
		go func() {
			defer warm.Done()
			if d, err := warmer.Allow(ctx, "k"); err != nil || !d.Allowed {
				t.Error(d, err)
			}
		}()
	}
	warm.Wait()
	before := counted(c)

	var received, fellBack, calls atomic.Int64
	stalled(t, srv, func(ctx context.Context) {
		calls.Add(1)
		d, err := l.Allow(ctx, "k")
		switch {
		case err != nil:
			t.Error(err)
		case d.Fallback != ratelimit.Fallback{}:
			fellBack.Add(1)
		case d.Allowed:
			received.Add(1)
		}
	})
	after := counted(drained(t, c, srv))
	t.Logf("%d calls during the stall, %d decided by the fallback, %d admissions received; Redis counted %d", calls.Load(), fellBack.Load(), received.Load(), after-before)
	if fellBack.Load() == 0 {
		t.Fatal("no call fell back: the stall tested nothing")
	}
	if got, want := after-before, received.Load(); got != want {
		t.Errorf("Redis counted %d admissions during the stall, callers received %d: %d abandoned calls counted", got, want, got-want)
	}
}

func TestStallHoldsNoAbandonedLease(t *testing.T) {
	srv := redisserver.New(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: stallCallers})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	l, err := inflight.New(c, "ledger", 8, 30*time.Second, inflight.WithTimeout(stallTimeout), inflight.WithFallback(ratelimit.FailClosed))
	if err != nil {
		t.Fatal(err)
	}
	// Four holders took leases before the stall and release them during
	// it: their Release fails (50 ms), and must still get through.
	// (Each acquire is tried until Redis decides it: on a loaded machine
	// one can run into the 50 ms timeout, fall back, and open the breaker
	// for a probe's while: acquireAll tries for up to 10 s.)
	holders := acquireAll(t, l, "k", 4)
	var released sync.Once
	var heldByCallers, fellBack atomic.Int64
	resumed := stalled(t, srv, func(ctx context.Context) {
		released.Do(func() {
			for _, h := range holders {
				if err := h.Release(ctx); err == nil {
					t.Error("a Release succeeded while the server was stopped")
				}
			}
		})
		lease, d, err := l.Acquire(ctx, "k")
		switch {
		case err != nil:
			t.Error(err)
		case d.Fallback != ratelimit.Fallback{}:
			fellBack.Add(1)
		case lease != nil:
			heldByCallers.Add(1) // and never released: it would be a bug
		}
	})
	if fellBack.Load() == 0 || heldByCallers.Load() != 0 {
		t.Fatalf("%d acquires fell back, %d got a lease while the server was stopped", fellBack.Load(), heldByCallers.Load())
	}
	// Nobody holds a lease now. One second after the resume none may be
	// held in Redis: no acquire given up during the stall took a slot, and
	// the holders' releases got through.
	time.Sleep(time.Until(resumed.Add(time.Second)))
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	live, err := c.ZCount(ctx, l.RedisKey("k"), fmt.Sprintf("(%d", now.UnixMicro()), "+inf").Result()
	if err != nil {
		t.Fatal(err)
	}
	if live != 0 {
		members, _ := c.ZRangeWithScores(ctx, l.RedisKey("k"), 0, -1).Result()
		t.Errorf("1 s after the resume %d leases are held, by nobody: %v", live, members)
	}
}

// liveLeases counts the leases held at key by the server's clock.
func liveLeases(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	ctx := context.Background()
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.ZCount(ctx, key, fmt.Sprintf("(%d", now.UnixMicro()), "+inf").Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// freedWithin polls until no lease is held at key, for at most limit after
// from, and returns how long after from that was.
func freedWithin(t *testing.T, c *redis.Client, key string, from time.Time, limit time.Duration) time.Duration {
	t.Helper()
	for {
		n := liveLeases(t, c, key)
		if n == 0 {
			return time.Since(from)
		}
		if time.Since(from) > limit {
			t.Fatalf("%v after the resume %d leases are still held, by nobody", limit, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Issue 24.5: 200 of 500 leases (30 s TTL) held, the server stopped, all
// 200 released (each Release fails within its timeout): once the server
// runs again, every slot is given back by the background releases. They
// shared 64 places per limiter, and past those a release was dropped with
// no word: 120-136 slots stayed held for the whole TTL.
func TestStallReleasesEveryHeldLease(t *testing.T) {
	srv := redisserver.New(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	var dropped atomic.Int64
	l, err := inflight.New(c, "held", 500, 30*time.Second, inflight.WithTimeout(stallTimeout),
		inflight.WithHook(func(_ context.Context, e inflight.Event) {
			if errors.Is(e.Err, inflight.ErrReleaseDropped) {
				dropped.Add(1)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	leases := acquireAll(t, l, "k", 200)
	srv.Pause()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for _, lease := range leases[g*10 : g*10+10] {
				err := lease.Release(ctx)
				switch {
				case errors.Is(err, ratelimit.ErrUnavailable) && !errors.Is(err, inflight.ErrReleaseDropped):
					failed.Add(1)
				default:
					t.Errorf("a Release while the server is stopped: %v, want ErrUnavailable", err)
				}
			}
		}(g)
	}
	wg.Wait()
	srv.Resume()
	resumed := time.Now()
	took := freedWithin(t, c, l.RedisKey("k"), resumed, 5*time.Second)
	if dropped.Load() != 0 {
		t.Errorf("%d releases reported dropped, want none (the bound is far above 200)", dropped.Load())
	}
	t.Logf("%d releases failed during the stall; every slot free %v after the resume", failed.Load(), took.Round(time.Millisecond))
}

// Issue 24.5: holders release while 64 callers keep acquiring through a
// stall; each failed acquire queues a release of its own (its reply may
// have been lost). The holders' releases must get through all the same:
// before, the acquires' releases filled the limiter's 64 places and the
// holders' were dropped.
func TestStallReleasesRaceFailedAcquires(t *testing.T) {
	srv := redisserver.New(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: stallCallers})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	l, err := inflight.New(c, "race", 8, 30*time.Second, inflight.WithTimeout(stallTimeout), inflight.WithFallback(ratelimit.FailClosed))
	if err != nil {
		t.Fatal(err)
	}
	holders := acquireAll(t, l, "k", 4)
	srv.Pause()
	stop := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	var acquires atomic.Int64
	for g := 0; g < stallCallers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				lease, d, err := l.Acquire(ctx, "k")
				acquires.Add(1)
				if err != nil || lease != nil || d.Fallback != ratelimit.FailClosed {
					t.Errorf("an acquire while the server is stopped: %v %v %v", lease, d, err)
				}
			}
		}()
	}
	// The holders release once the acquires' own releases have piled up.
	time.Sleep(300 * time.Millisecond)
	for _, h := range holders {
		if err := h.Release(ctx); !errors.Is(err, ratelimit.ErrUnavailable) || errors.Is(err, inflight.ErrReleaseDropped) {
			t.Errorf("a holder's Release while the server is stopped: %v, want ErrUnavailable", err)
		}
	}
	wg.Wait()
	srv.Resume()
	resumed := time.Now()
	took := freedWithin(t, c, l.RedisKey("k"), resumed, 5*time.Second)
	t.Logf("%d acquires failed during the stall; every slot free %v after the resume", acquires.Load(), took.Round(time.Millisecond))
}

// acquireAll takes n leases on key, trying each until Redis grants it (on
// a loaded machine one can run into the limiter's timeout).
//
// Under load an acquire can meet the limiter's timeout, and one whose dial
// it cut opens the node's breaker: calls then fail at once until a probe,
// 25 ms on, gets through. So each lease is tried again 10 ms apart for up
// to 10 s (a count of tries, failing fast, was spent in microseconds).
func acquireAll(t *testing.T, l *inflight.Limiter, key string, n int) []*inflight.Lease {
	t.Helper()
	var leases []*inflight.Lease
	for i := 0; i < n; i++ {
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			lease, d, err := l.Acquire(context.Background(), key)
			if err == nil && d.Allowed && lease != nil {
				leases = append(leases, lease)
				break
			}
			if time.Now().After(end) {
				t.Fatalf("acquire %d: %v %v", i, d, err)
			}
		}
	}
	return leases
}

// More failed releases than the bound, on a stopped server: MaxPending are
// kept and get through once it runs again; each one past the bound is
// reported, by Release's error and by the hook, and its lease stays held
// (until its TTL).
func TestStallReleasesPastTheBound(t *testing.T) {
	srv := redisserver.New(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	var reported atomic.Int64
	l, err := inflight.New(c, "bound", 100, time.Hour, inflight.WithTimeout(stallTimeout),
		inflight.WithHook(func(_ context.Context, e inflight.Event) {
			if errors.Is(e.Err, inflight.ErrReleaseDropped) {
				reported.Add(1)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	const extra = 100
	keys := make([]string, (inflight.MaxPending+extra)/100)
	leases := make([][]*inflight.Lease, len(keys))
	var wg sync.WaitGroup
	for k := range keys {
		keys[k] = fmt.Sprint("k", k)
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			leases[k] = acquireAll(t, l, keys[k], 100)
		}(k)
		if k%8 == 7 {
			wg.Wait()
		}
	}
	wg.Wait()
	srv.Pause()
	kept, dropped := 0, 0
	for _, ls := range leases {
		for _, lease := range ls {
			switch err := lease.Release(ctx); {
			case errors.Is(err, inflight.ErrReleaseDropped) && errors.Is(err, ratelimit.ErrUnavailable):
				dropped++
			case errors.Is(err, ratelimit.ErrUnavailable):
				kept++
			default:
				t.Fatalf("a Release on a stopped server: %v", err)
			}
		}
	}
	srv.Resume()
	resumed := time.Now()
	if kept != inflight.MaxPending || dropped != extra || reported.Load() != extra {
		t.Errorf("%d releases kept, %d dropped, %d reported; want %d, %d, %d", kept, dropped, reported.Load(), inflight.MaxPending, extra, extra)
	}
	for {
		var n int64
		for _, k := range keys {
			n += liveLeases(t, c, l.RedisKey(k))
		}
		if n == extra {
			break
		}
		if time.Since(resumed) > time.Minute {
			t.Fatalf("a minute after the resume %d leases are held, want the %d dropped", n, extra)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d releases kept, all through %v after the resume; %d dropped and reported",
		kept, time.Since(resumed).Round(time.Millisecond), dropped)
}

// A node that hangs opens its breaker within about one timeout. 16 paced
// callers with a 50 ms WithTimeout decide against a server stopped for
// 1.5 s: after each caller's first call, which waits out its timeout,
// calls are decided by the open breaker at once, not each by its timeout
// (go-redis reads on for its ReadTimeout, 3 s, so no error told the
// guard: 30 timeouts a caller before, and no call failed fast); and Redis
// decides again soon after the server runs.
func TestStallOpensTheBreaker(t *testing.T) {
	// GCRA's calls on a key wait in its line (coalescing); the fixed
	// window's, in the send stage's across keys; through the Functions
	// library, FCALL.
	for _, alg := range []ratelimit.Algorithm{ratelimit.GCRA, ratelimit.FixedWindow} {
		t.Run(alg.String(), func(t *testing.T) { stallOpensTheBreaker(t, alg, false) })
	}
	t.Run("gcra_fcall", func(t *testing.T) { stallOpensTheBreaker(t, ratelimit.GCRA, true) })
}

func stallOpensTheBreaker(t *testing.T, alg ratelimit.Algorithm, fcall bool) {
	srv := redisserver.New(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 16})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	var rdb ratelimit.Client = c
	if fcall {
		if err := bindings.LoadFunctions(ctx, c); err != nil {
			t.Fatal(err)
		}
		rdb = bindings.WithFunctions(c)
	}
	l, err := ratelimit.New(rdb, "open", ratelimit.PerSecond(1e6), ratelimit.WithAlgorithm(alg),
		ratelimit.WithTimeout(stallTimeout), ratelimit.WithFallback(ratelimit.FailClosed))
	if err != nil {
		t.Fatal(err)
	}
	// Warm: a decision from Redis. (On a loaded machine one can meet the
	// timeout, with nothing heard yet, and open the breaker for a probe's
	// while: tries 10 ms apart, for up to 10 s.)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if d, err := l.Allow(ctx, "k"); err == nil && d.Cause == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal("no decision from Redis before the stall")
		}
	}
	const callers, stall = 16, 1500 * time.Millisecond
	var slow, fast, fromRedis atomic.Int64
	srv.Pause()
	stop := time.Now().Add(stall)
	var wg sync.WaitGroup
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				d, err := l.Allow(ctx, "k")
				switch {
				case err != nil:
					t.Error(err)
					return
				case d.Cause == nil:
					fromRedis.Add(1)
				case strings.Contains(d.Cause.Error(), "is unreachable"):
					fast.Add(1) // the breaker's answer
				default:
					slow.Add(1) // the timeout's
				}
				time.Sleep(time.Millisecond) // paced, as callers are
			}
		}()
	}
	wg.Wait()
	srv.Resume()
	resumed := time.Now()
	back := time.Duration(-1)
	for time.Since(resumed) < 2*time.Second {
		if d, err := l.Allow(ctx, "k"); err == nil && d.Cause == nil {
			back = time.Since(resumed)
			break
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("during the stall: %d calls waited out the timeout, %d met the open breaker, %d came from Redis; Redis decided again %v after the resume", slow.Load(), fast.Load(), fromRedis.Load(), back)
	if fromRedis.Load() != 0 {
		t.Errorf("%d decisions came from a stopped server", fromRedis.Load())
	}
	if slow.Load() > 4*callers || fast.Load() < 10*slow.Load() {
		t.Errorf("%d calls waited out their timeout and %d met the open breaker: it did not open", slow.Load(), fast.Load())
	}
	if back < 0 || back > 500*time.Millisecond {
		t.Errorf("Redis decided again %v after the resume; want within 500 ms", back)
	}
}

// A node that answers other calls is not down, though a call of its times
// out. A hook holds every call on the key "slow" 300 ms before it is sent
// (as a congested path would), past the limiter's 200 ms timeout, while 8
// callers on other keys get their answers: none of theirs may come from
// the fallback, which an opened breaker would give them. (The timeout is
// long, so that a machine too busy to read any answer for that long,
// which would rightly open the breaker, does not come into it.)
func TestSlowCallsKeepTheBreakerClosed(t *testing.T) {
	srv := redisserver.New(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	c.AddHook(holdSlow)
	// A call of its own per decision, so that no batch mixes the slow key
	// with the others.
	l, err := ratelimit.New(c, "slow", ratelimit.PerSecond(1e6), ratelimit.WithoutCoalescing(),
		ratelimit.WithTimeout(200*time.Millisecond), ratelimit.WithFallback(ratelimit.FailClosed))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stop := time.Now().Add(1500 * time.Millisecond)
	var slowFell, others, othersFell atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 9; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("k%d", g)
			if g == 0 {
				key = "slow"
			}
			for time.Now().Before(stop) {
				d, err := l.Allow(ctx, key)
				switch {
				case err != nil:
					t.Error(err)
					return
				case g == 0:
					if d.Cause != nil {
						slowFell.Add(1)
					}
				default:
					others.Add(1)
					if d.Cause != nil {
						othersFell.Add(1)
						t.Errorf("%s: fell back (%v) while the node answered", key, d.Cause)
						return
					}
				}
				if g > 0 {
					time.Sleep(time.Millisecond) // paced, as callers are
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("the slow key fell back %d times; the others made %d calls, %d fell back", slowFell.Load(), others.Load(), othersFell.Load())
	if slowFell.Load() == 0 {
		t.Fatal("no call on the slow key timed out: the test tested nothing")
	}
}

// holdSlow holds a call on the key "slow" (rl:<name>:{slow}) 300 ms
// before sending it.
var holdSlow = testredis.Hook{Process: func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.HasSuffix(s, "{slow}") {
			time.Sleep(300 * time.Millisecond)
			break
		}
	}
	return next(ctx, cmd)
}}
