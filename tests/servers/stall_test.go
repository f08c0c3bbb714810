package servers

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
	// one can run into the 50 ms timeout and fall back.)
	var holders []*inflight.Lease
	for i := 0; i < 4; i++ {
		for try := 0; ; try++ {
			lease, d, err := l.Acquire(ctx, "k")
			if err == nil && d.Allowed && lease != nil {
				holders = append(holders, lease)
				break
			}
			if try == 100 {
				t.Fatalf("acquire %d before the stall: %v %v", i, d, err)
			}
		}
	}
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
