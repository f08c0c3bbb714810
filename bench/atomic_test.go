package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
	"github.com/redlimit/redlimit/ratelimit/inflight"
)

// atomicCallers are the goroutine counts BenchmarkAtomic runs at.
var atomicCallers = []int{1, 64}

// BenchmarkAtomic times multi.lua and concurrency.lua the way
// BenchmarkDecision times the others (same scenarios, the same metrics,
// named BenchmarkAtomic/scenario=S/g=G/impl=I so that their rows join the
// decision tables), at 1 and 64 goroutines, next to what they replace:
//
//   - redlimit_multi_2 and redlimit_multi_4: ratelimit.Atomic over 2 and 4
//     GCRA limits (the scenario's quota, then 1000 an hour, 10 000 a day
//     and 100 000 a week), one atomic call;
//   - redlimit_allowall_2: ratelimit.All over the same 2 limiters, one
//     pipeline of two GCRA calls, not atomic;
//   - redlimit_lease: an inflight.Limiter's Acquire and Release of one
//     lease (two calls; the scenario's burst in flight, at most 10 000),
//     the cost of one capped request.
//
// One GCRA limit is redlimit_gcra of BenchmarkDecision, in the same pass.
func BenchmarkAtomic(b *testing.B) {
	ctx := context.Background()
	c, sent := newClient(b)
	if err := bindings.LoadAll(ctx, c); err != nil {
		b.Fatal(err)
	}
	warmPool(b, c)
	for _, sc := range scenarios {
		names := []string{"redlimit_multi_2", "redlimit_multi_4", "redlimit_allowall_2", "redlimit_lease"}
		for _, g := range atomicCallers {
			start := rand.IntN(len(names))
			for i := range names {
				i := (start + i) % len(names)
				expect("decision", "scenario", sc.name, "g", g, "impl", names[i])
				b.Run(fmt.Sprintf("scenario=%s/g=%d/impl=%s", sc.name, g, names[i]), func(b *testing.B) {
					benchDecisions(b, ctx, c, sent, atomicLimiters(c, sc.q)[i], sc, g)
				})
			}
		}
	}
}

// atomicLimiters returns BenchmarkAtomic's rows, in the order of its names.
func atomicLimiters(c *redis.Client, q quota) []limiter {
	limits := []ratelimit.Limit{
		{Rate: q.rate, Period: q.period, Burst: q.burst},
		ratelimit.Per(1000, time.Hour), ratelimit.Per(10000, 24*time.Hour), {Rate: 100000, Period: 7 * 24 * time.Hour, Burst: 100000},
	}
	gcras := make([]*ratelimit.Limiter, len(limits))
	for i, l := range limits {
		lim, err := ratelimit.New(c, fmt.Sprintf("atomic%d", i), l, ratelimit.WithPrefix(fmt.Sprintf("rl%d:", i)))
		if err != nil {
			panic(err) // limits of this file's own
		}
		gcras[i] = lim
	}
	multi := func(n int) func(ctx context.Context, key string) (bool, bool, error) {
		m, err := ratelimit.Atomic(gcras[:n]...)
		if err != nil {
			panic(err)
		}
		return func(ctx context.Context, key string) (bool, bool, error) {
			d, err := m.AllowN(ctx, key, 1)
			return err == nil && d.Allowed, false, err
		}
	}
	leases, err := inflight.New(c, "lease", min(q.burst, 10000), time.Minute, inflight.WithPrefix("rl:lease:"))
	if err != nil {
		panic(err)
	}
	both, err := ratelimit.All(gcras[0], gcras[1])
	if err != nil {
		panic(err)
	}
	return []limiter{
		{"redlimit_multi_2", "rate", multi(2)},
		{"redlimit_multi_4", "rate", multi(4)},
		{"redlimit_allowall_2", "rate", func(ctx context.Context, key string) (bool, bool, error) {
			d, err := both.AllowN(ctx, key, 1)
			return err == nil && d.Allowed, false, err
		}},
		{"redlimit_lease", "", func(ctx context.Context, key string) (bool, bool, error) {
			lease, d, err := leases.Acquire(ctx, key)
			if err != nil || !d.Allowed {
				return false, false, err
			}
			return true, false, lease.Release(ctx)
		}},
	}
}
