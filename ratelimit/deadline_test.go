package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/internal/redisserver"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/inflight"
)

// A caller's deadline is the caller's. With Redis healthy, 16 goroutines
// decide under 300 µs deadlines (an HTTP server with tight per-request
// deadlines, on a cold pool: each one that gives up mid-call costs go-redis
// a connection, so the pool keeps dialing), beside a calm caller with no
// deadline every 5 ms. The calm caller's every decision must come from
// Redis, and an impatient caller gets Redis's decision or a context error,
// never ErrUnavailable and never a fallback's decision. (The guard took a
// dial cut short by a caller's context, or go-redis's pool repeating that
// dial error to the next caller, for a dead node and opened its breaker:
// 13-56 of the calm caller's ~300 decisions came from FailOpen.)
func TestCallersDeadlineIsTheCallers(t *testing.T) {
	srv := redisserver.New(t)
	type decideFunc func(ctx context.Context, key string) (fallback bool, err error)
	ofRule := func(r ratelimit.Rule) decideFunc {
		return func(ctx context.Context, key string) (bool, error) {
			d, err := r.Allow(ctx, key)
			return d.Cause != nil || d.Fallback != (ratelimit.Fallback{}) || anyPartFellBack(d), err
		}
	}
	opts := []ratelimit.Option{ratelimit.WithFallback(ratelimit.FailOpen)}
	cases := []struct {
		name string
		// make builds the decision over a fresh client (a cold pool);
		// shared says whether every impatient caller uses one key (the
		// coalescer's batches) or each its own.
		make   func(t *testing.T, rdb *redis.Client) decideFunc
		shared bool
		// pool is the client's PoolSize, 0 for go-redis's default: once
		// that many dials have failed, its pool answers every dial with
		// the last one's error until a redial of its own gets through, so
		// a small pool hands an impatient caller's dial error to the calm
		// one often.
		pool int
	}{
		{"a limiter, one key each", func(t *testing.T, rdb *redis.Client) decideFunc {
			return ofRule(ok(ratelimit.New(rdb, "impatient", ratelimit.PerSecond(1e6), opts...)))
		}, false, 0},
		{"a limiter, a pool of 4", func(t *testing.T, rdb *redis.Client) decideFunc {
			return ofRule(ok(ratelimit.New(rdb, "impatient", ratelimit.PerSecond(1e6), opts...)))
		}, false, 4},
		{"a limiter, one key coalesced", func(t *testing.T, rdb *redis.Client) decideFunc {
			return ofRule(ok(ratelimit.New(rdb, "impatient", ratelimit.PerSecond(1e6), opts...)))
		}, true, 0},
		{"a fixed window (one call per decision)", func(t *testing.T, rdb *redis.Client) decideFunc {
			return ofRule(ok(ratelimit.New(rdb, "impatient", ratelimit.PerSecond(1e6),
				append(opts, ratelimit.WithAlgorithm(ratelimit.FixedWindow))...)))
		}, false, 0},
		{"All", func(t *testing.T, rdb *redis.Client) decideFunc {
			a := ok(ratelimit.New(rdb, "impatient-a", ratelimit.PerSecond(1e6), opts...))
			b := ok(ratelimit.New(rdb, "impatient-b", ratelimit.PerMinute(1e7), opts...))
			return ofRule(ok(ratelimit.All(a, b)))
		}, false, 0},
		{"Atomic", func(t *testing.T, rdb *redis.Client) decideFunc {
			a := ok(ratelimit.New(rdb, "impatient-a", ratelimit.PerSecond(1e6), opts...))
			b := ok(ratelimit.New(rdb, "impatient-b", ratelimit.PerMinute(1e7), opts...))
			return ofRule(ok(ratelimit.Atomic(a, b)))
		}, false, 0},
		{"FCALL", func(t *testing.T, rdb *redis.Client) decideFunc {
			if err := bindings.LoadFunctions(context.Background(), rdb); err != nil {
				t.Fatal(err)
			}
			return ofRule(ok(ratelimit.New(bindings.WithFunctions(rdb), "impatient", ratelimit.PerSecond(1e6), opts...)))
		}, false, 0},
		{"inflight, a pool of 4", func(t *testing.T, rdb *redis.Client) decideFunc {
			l := ok(inflight.New(rdb, "impatient", 1e4, time.Minute, inflight.WithFallback(ratelimit.FailOpen)))
			return func(ctx context.Context, key string) (bool, error) {
				lease, d, err := l.Acquire(ctx, key)
				if lease != nil {
					lease.Release(context.Background())
				}
				return d.Cause != nil, err
			}
		}, false, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: c.pool})
			defer rdb.Close()
			defer leasesGone(t, rdb)
			decide := c.make(t, rdb)
			var (
				stop                                 atomic.Bool
				early, earlyRedis, earlyCtx, earlyFB atomic.Int64
				wrong                                sync.Map // an impatient caller's other errors, by text
			)
			var wg sync.WaitGroup
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; !stop.Load(); i++ {
						key := fmt.Sprintf("early-%d-%d", g, i%100)
						if c.shared {
							key = "early"
						}
						ctx, cancel := context.WithTimeout(context.Background(), 300*time.Microsecond)
						fellBack, err := decide(ctx, key)
						cancel()
						early.Add(1)
						switch {
						case err == nil && fellBack:
							earlyFB.Add(1)
						case err == nil:
							earlyRedis.Add(1)
						case errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ratelimit.ErrUnavailable):
							earlyCtx.Add(1)
						default:
							wrong.LoadOrStore(err.Error(), true)
						}
						// Paced a little, so that two cores still run the
						// calm caller and Redis (the load is the deadlines,
						// not the rate).
						time.Sleep(200 * time.Microsecond)
					}
				}()
			}
			var calm, calmFB int
			var calmErrs []error
			deadline := time.Now().Add(1500 * time.Millisecond)
			for time.Now().Before(deadline) {
				fellBack, err := decide(context.Background(), "calm")
				calm++
				if err != nil {
					calmErrs = append(calmErrs, err)
				} else if fellBack {
					calmFB++
				}
				time.Sleep(5 * time.Millisecond)
			}
			stop.Store(true)
			wg.Wait()
			t.Logf("calm caller: %d decisions, %d by the fallback, %d errors; impatient callers: %d decisions, %d from Redis, %d context errors, %d by the fallback",
				calm, calmFB, len(calmErrs), early.Load(), earlyRedis.Load(), earlyCtx.Load(), earlyFB.Load())
			if calmFB != 0 || len(calmErrs) != 0 {
				t.Errorf("the calm caller got %d fallback decisions and errors %v while Redis was healthy; want every decision from Redis", calmFB, calmErrs)
			}
			if n := earlyFB.Load(); n != 0 {
				t.Errorf("%d of the impatient callers' decisions came from the fallback; want Redis's decision or a context error", n)
			}
			wrong.Range(func(k, _ any) bool {
				t.Errorf("an impatient caller got %q; want an error matching context.DeadlineExceeded, not ErrUnavailable", k)
				return true
			})
			if earlyCtx.Load() == 0 {
				t.Errorf("no impatient caller ran out of time: the load did not test deadlines")
			}
		})
	}
}

func ok[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func anyPartFellBack(d ratelimit.Decision) bool {
	for _, p := range d.Parts {
		if p.Cause != nil {
			return true
		}
	}
	return false
}

// leasesGone waits until no lease of inflight's "impatient" limiter is
// held and no background release is under way: an acquire whose caller
// gave up is released in the background (its answer may have been lost
// after it took a lease), and that release must get through while the
// client is open, or its goroutine outlives the test.
func leasesGone(t *testing.T, rdb *redis.Client) {
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		keys, err := rdb.Keys(ctx, "rl:inflight:impatient:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		held := int64(0)
		for _, k := range keys {
			held += rdb.ZCard(ctx, k).Val()
		}
		buf := make([]byte, 1<<20)
		sending := strings.Contains(string(buf[:runtime.Stack(buf, true)]), "inflight.(*Limiter).sendPending")
		if held == 0 && !sending {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the load, %d leases are held (background releases under way: %v)", held, sending)
		}
	}
}
