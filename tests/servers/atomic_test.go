package servers

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/inflight"
	"github.com/redlimit/redlimit/tests/scenario"
)

// noRetries is a client of the same server that never sends a command
// twice: go-redis retries a write script after a read timeout, and a load
// test must count each call once.
func noRetries(t *testing.T, c redis.Scripter) redis.Scripter {
	t.Helper()
	var out redis.Scripter
	switch c := c.(type) {
	case *redis.Client:
		o := *c.Options()
		o.MaxRetries, o.ReadTimeout, o.PoolSize = -1, 30*time.Second, 64
		nc := redis.NewClient(&o)
		t.Cleanup(func() { nc.Close() })
		out = nc
	case *redis.ClusterClient:
		o := *c.Options()
		o.MaxRetries, o.ReadTimeout, o.PoolSize = -1, 30*time.Second, 64
		nc := redis.NewClusterClient(&o)
		t.Cleanup(func() { nc.Close() })
		out = nc
	default:
		t.Fatalf("%T", c)
	}
	return out
}

// TestMultiUnderLoad: 64 goroutines send multi.lua random subsets of three
// limits on one user's keys (one hash tag), with random costs, all at one
// caller clock, so no capacity comes back during the run. Then each key's
// TAT says exactly how many units it counted (TAT - clock = units ×
// interval), and that must be the sum of the costs of the admitted calls
// that named the key: a call counted by some keys and not others, or
// twice, would break the sum, and more than a limit's burst would break
// the bound. Each limit fills at least halfway (far more is asked), and
// the first two bind denials of their own.
func TestMultiUnderLoad(t *testing.T) {
	type lim struct{ burst, rate, periodMs int64 }
	lims := []lim{{40, 1, 1000}, {70, 3, 1000}, {100, 10, 60000}}
	for _, target := range realTargets() {
		t.Run(target.name, func(t *testing.T) {
			c := noRetries(t, target.open(t))
			ctx := context.Background()
			tag := fmt.Sprintf("load%d", time.Now().UnixNano())
			keys := make([]string, len(lims))
			for i := range keys {
				keys[i] = fmt.Sprintf("m%d:{%s}", i, tag)
			}
			// 20 s ahead of the server: a key that holds nothing is judged
			// at the later of the caller's clock and TIME, so every call is
			// judged at this clock while the run lasts less than 20 s.
			now := time.UnixMicro(serverTime(t, c) + 20e6)
			var tally [3]atomic.Int64
			var deniedBy [3]atomic.Int64
			var calls, failed atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < 64; g++ {
				wg.Add(1)
				go func(seed int64) {
					defer wg.Done()
					rng := rand.New(rand.NewSource(seed))
					for i := 0; i < 40; i++ {
						var ks []string
						var nums []bindings.MultiLimit
						var which []int
						for j, l := range lims {
							if rng.Intn(3) > 0 {
								ks = append(ks, keys[j])
								nums = append(nums, bindings.MultiLimit{Burst: l.burst, Rate: l.rate, Period: time.Duration(l.periodMs) * time.Millisecond})
								which = append(which, j)
							}
						}
						if len(ks) == 0 {
							continue
						}
						cost := int64(1 + rng.Intn(3))
						r, err := bindings.Multi(ctx, c, ks, bindings.MultiParams{Cost: cost, Now: now, Limits: nums})
						calls.Add(1)
						if err != nil {
							failed.Add(1)
							t.Error(err)
							return
						}
						if r.Allowed {
							for _, j := range which {
								tally[j].Add(cost)
							}
						} else {
							deniedBy[which[r.Denied-1]].Add(1)
						}
					}
				}(int64(g))
			}
			wg.Wait()
			if failed.Load() > 0 {
				t.Fatalf("%d of %d calls failed", failed.Load(), calls.Load())
			}
			for j, l := range lims {
				state, err := c.(redis.Cmdable).Get(ctx, keys[j]).Result()
				if err != nil && err != redis.Nil {
					t.Fatal(err)
				}
				units := int64(0)
				if err == nil {
					tat, interval, _, err := scenario.ParseGCRA(state, serverTime(t, c))
					if err != nil {
						t.Fatalf("limit %d: %v", j, err)
					}
					units = (tat - now.UnixMicro()) / interval
					if (tat-now.UnixMicro())%interval != 0 {
						t.Errorf("limit %d: TAT %d is not a whole number of intervals past the clock", j, tat)
					}
				}
				if units != tally[j].Load() || units > l.burst || units < l.burst/2 {
					t.Errorf("limit %d (burst %d): the key counted %d units, the admitted calls that named it %d", j, l.burst, units, tally[j].Load())
				}
				if deniedBy[j].Load() == 0 && j < 2 {
					t.Errorf("limit %d never bound a denial: the load did not try it", j)
				}
			}
			t.Logf("%d calls; admitted units %d/%d/%d; denials bound by limit %d/%d/%d", calls.Load(),
				tally[0].Load(), tally[1].Load(), tally[2].Load(), deniedBy[0].Load(), deniedBy[1].Load(), deniedBy[2].Load())
		})
	}
}

// TestMultiCrossSlot: on a cluster, keys of different hash tags are
// refused by Redis itself (CROSSSLOT), and nothing is written. The script
// cannot tell slots apart; ratelimit's keys always share one tag.
func TestMultiCrossSlot(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	tag := strconv.FormatInt(time.Now().UnixNano(), 10)
	var a, b string
	for i := 0; ; i++ {
		a, b = fmt.Sprintf("x:{%s}", tag), fmt.Sprintf("y:{%s-%d}", tag, i)
		if c.ClusterKeySlot(ctx, a).Val() != c.ClusterKeySlot(ctx, b).Val() {
			break
		}
	}
	_, err := bindings.Multi(ctx, c, []string{a, b}, bindings.MultiParams{Cost: 1, Limits: []bindings.MultiLimit{{Burst: 5, Rate: 5, Period: time.Second}, {Burst: 5, Rate: 5, Period: time.Second}}})
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("keys in two slots: %v, want CROSSSLOT", err)
	}
	for _, k := range []string{a, b} {
		if n := c.Exists(ctx, k).Val(); n != 0 {
			t.Errorf("%s was written", k)
		}
	}
	// The same through ratelimit: one tag, one slot, on the cluster.
	x, _ := ratelimit.New(c, "x", ratelimit.PerSecond(5))
	y, _ := ratelimit.New(c, "y", ratelimit.PerMinute(5))
	m, err := ratelimit.Atomic(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := m.AllowN(ctx, tag, 1); err != nil || !d.Allowed || len(d.Parts) != 2 || !d.Parts[0].Allowed || !d.Parts[1].Allowed {
		t.Fatalf("ratelimit on the cluster: %v %v", d, err)
	}
}

// TestAtomicScriptsClockBound: on real servers the two scripts refuse a
// caller clock more than 60 s from TIME (BADARG, nothing written) and take
// one inside it, as the others do (TestCallerClockBoundOnRealServers).
func TestAtomicScriptsClockBound(t *testing.T) {
	for _, target := range realTargets() {
		t.Run(target.name, func(t *testing.T) {
			c := target.open(t)
			ctx := context.Background()
			tag := strconv.FormatInt(time.Now().UnixNano(), 10)
			multiKeys := []string{"ma:{" + tag + "}", "mb:{" + tag + "}"}
			leaseKey := "lc:{" + tag + "}"
			s := serverTime(t, c)
			for _, now := range []int64{s + 70e6, s - 70e6} {
				_, err := bindings.MultiScript.Run(ctx, c, multiKeys, "1", now, "0", "5", "5", "1000", "5", "5", "1000").Result()
				_, err2 := bindings.ConcurrencyScript.Run(ctx, c, []string{leaseKey}, "acquire", "a", "2", "1000", now, "0").Result()
				want := fmt.Sprintf("BADARG now must be 0 (the server's clock) or within 60000000 µs of the server's TIME, got '%d'", now)
				for _, e := range []error{err, err2} {
					if e == nil || !strings.Contains(e.Error(), want) {
						t.Errorf("now %d (TIME %d): %v, want %q", now, s, e, want)
					}
				}
				if n := c.(redis.Cmdable).Exists(ctx, append(multiKeys, leaseKey)...).Val(); n != 0 {
					t.Fatalf("a refused call created %d keys", n)
				}
			}
			now := serverTime(t, c) + 50e6
			if _, err := bindings.MultiScript.Run(ctx, c, multiKeys, "1", now, "0", "5", "5", "1000", "5", "5", "1000").Result(); err != nil {
				t.Error(err)
			}
			if _, err := bindings.ConcurrencyScript.Run(ctx, c, []string{leaseKey}, "acquire", "a", "2", "1000", now, "0").Result(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestLeasesUnderLoad: 64 goroutines compete for 5 leases per key through
// ratelimit's inflight.Limiter. While nobody releases, exactly 5 acquire
// (no more: the cap; no fewer: the script admits until full). Then they
// churn, each holding its lease a moment: no more than 5 hold one at any
// time, by the holders' own count and by the set's size, and every lease
// is released in the end.
func TestLeasesUnderLoad(t *testing.T) {
	const limit = 5
	for _, target := range realTargets() {
		t.Run(target.name, func(t *testing.T) {
			c := noRetries(t, target.open(t))
			ctx := context.Background()
			lim, err := inflight.New(c, fmt.Sprintf("load%d", time.Now().UnixNano()), limit, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			key := "user"
			// Phase 1: everyone acquires, nobody releases.
			leases := make(chan *inflight.Lease, 64)
			var wg sync.WaitGroup
			for g := 0; g < 64; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l, d, err := lim.Acquire(ctx, key)
					if err != nil {
						t.Error(err)
					}
					if d.Allowed {
						leases <- l
					}
				}()
			}
			wg.Wait()
			close(leases)
			if n := len(leases); n != limit {
				t.Fatalf("%d of 64 acquired with nobody releasing, want exactly %d", n, limit)
			}
			for l := range leases {
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// Phase 2: churn.
			var holding, most, acquired, denied atomic.Int64
			stop := make(chan struct{})
			var monitor sync.WaitGroup
			var biggest atomic.Int64
			monitor.Add(1)
			go func() {
				defer monitor.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					n := c.(redis.Cmdable).ZCard(ctx, lim.RedisKey(key)).Val()
					for b := biggest.Load(); n > b && !biggest.CompareAndSwap(b, n); b = biggest.Load() {
					}
				}
			}()
			for g := 0; g < 64; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 30; i++ {
						l, d, err := lim.Acquire(ctx, key)
						if err != nil {
							t.Error(err)
							return
						}
						if !d.Allowed {
							denied.Add(1)
							continue
						}
						acquired.Add(1)
						n := holding.Add(1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						time.Sleep(time.Millisecond)
						holding.Add(-1)
						if err := l.Release(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			monitor.Wait()
			if most.Load() > limit || biggest.Load() > limit {
				t.Errorf("%d held at once by the holders' count, %d leases in the set; the cap is %d", most.Load(), biggest.Load(), limit)
			}
			if acquired.Load() == 0 || denied.Load() == 0 {
				t.Errorf("%d acquired, %d denied: the load did not reach the cap", acquired.Load(), denied.Load())
			}
			if n := c.(redis.Cmdable).Exists(ctx, lim.RedisKey(key)).Val(); n != 0 {
				t.Errorf("leases left after every holder released: %v", c.(redis.Cmdable).ZRange(ctx, lim.RedisKey(key), 0, -1).Val())
			}
			t.Logf("%d acquired, %d denied, at most %d held, %d in the set", acquired.Load(), denied.Load(), most.Load(), biggest.Load())
		})
	}
}

// TestCrashedHoldersExpire: holders that take every lease and vanish free
// them when the TTL runs out on the server's clock; the next acquire then
// passes and removes the expired ones.
func TestCrashedHoldersExpire(t *testing.T) {
	for _, target := range realTargets() {
		t.Run(target.name, func(t *testing.T) {
			c := target.open(t)
			ctx := context.Background()
			lim, err := inflight.New(c, fmt.Sprintf("crash%d", time.Now().UnixNano()), 3, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				if _, d, err := lim.Acquire(ctx, "u"); err != nil || !d.Allowed {
					t.Fatalf("acquire %d: %v %v", i, d, err)
				}
			}
			if _, d, _ := lim.Acquire(ctx, "u"); d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 300*time.Millisecond {
				t.Fatalf("over the cap: %v", d)
			} else {
				time.Sleep(d.RetryAfter + 50*time.Millisecond) // the server's clock moves at least this far
			}
			l, d, err := lim.Acquire(ctx, "u")
			if err != nil || !d.Allowed {
				t.Fatalf("after the first lease's TTL: %v %v", d, err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			if _, d, _ := lim.Acquire(ctx, "u"); !d.Allowed || d.Remaining != 2 {
				t.Errorf("after every crashed lease's TTL: %v", d)
			}
			if n := c.(redis.Cmdable).ZCard(ctx, lim.RedisKey("u")).Val(); n != 1 {
				t.Errorf("%d members after the reap, want 1", n)
			}
		})
	}
}

// TestAtomicKeysExpire: no key of either script outlives its state on a
// real server: multi's keys go when their TATs pass, a set of leases when
// its last lease expires, released or not.
func TestAtomicKeysExpire(t *testing.T) {
	for _, target := range realTargets() {
		t.Run(target.name, func(t *testing.T) {
			c := target.open(t)
			ctx := context.Background()
			tag := strconv.FormatInt(time.Now().UnixNano(), 10)
			keys := []string{"ea:{" + tag + "}", "eb:{" + tag + "}", "ec:{" + tag + "}"}
			r, err := bindings.Multi(ctx, c, keys[:2], bindings.MultiParams{Cost: 1, Limits: []bindings.MultiLimit{{Burst: 2, Rate: 1, Period: 200 * time.Millisecond}, {Burst: 5, Rate: 5, Period: time.Second}}})
			if err != nil || !r.Allowed {
				t.Fatalf("%v %v", r, err)
			}
			lim, err := inflight.New(c, "ec", 2, 200*time.Millisecond, inflight.WithPrefix("ec:"))
			if err != nil {
				t.Fatal(err)
			}
			if _, d, err := lim.Acquire(ctx, tag); err != nil || !d.Allowed {
				t.Fatalf("%v %v", d, err)
			}
			if lim.RedisKey(tag) != keys[2] {
				t.Fatalf("key %q", lim.RedisKey(tag))
			}
			// The longest state here is spent 200 ms after its write.
			time.Sleep(300 * time.Millisecond)
			if n := c.(redis.Cmdable).Exists(ctx, keys...).Val(); n != 0 {
				t.Errorf("%d of %v outlived their state", n, keys)
			}
		})
	}
}
