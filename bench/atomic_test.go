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
)

// BenchmarkAtomic times multi.lua and concurrency.lua the way
// BenchmarkDecision times the others (same keys, modes and metrics), next
// to what they replace:
//
//   - redlimit_multi_2 and redlimit_multi_4: ratelimit.Multi over 2 and 4
//     GCRA limits (benchQuota, then 1000 an hour, 10 000 a day and 100 000
//     a week), one atomic call;
//   - redlimit_allowall_2: AllowAll over the same 2 limiters, one
//     pipeline of two GCRA calls, not atomic;
//   - redlimit_gcra: one limit, for scale;
//   - redlimit_lease: a ConcurrencyLimiter's Acquire and Release of one
//     lease (two calls; benchQuota's burst in flight), the cost of one
//     capped request.
func BenchmarkAtomic(b *testing.B) {
	ctx := context.Background()
	c, sent := newClient(b)
	if err := bindings.LoadAll(ctx, c); err != nil {
		b.Fatal(err)
	}
	all := atomicLimiters(c, benchQuota)
	start := rand.IntN(len(all))
	for _, keys := range []string{"hot", "many"} {
		for _, mode := range []string{"serial", "parallel"} {
			for i := range all {
				l := all[(start+i)%len(all)]
				b.Run(fmt.Sprintf("keys=%s/mode=%s/impl=%s", keys, mode, l.name), func(b *testing.B) {
					benchDecisions(b, ctx, c, sent, l, keys == "many", mode == "parallel")
				})
			}
		}
	}
}

func atomicLimiters(c *redis.Client, q quota) []limiter {
	limits := []ratelimit.Limit{
		{Rate: q.rate, Period: time.Second, Burst: q.burst},
		ratelimit.PerHour(1000), ratelimit.PerDay(10000), {Rate: 100000, Period: 7 * 24 * time.Hour, Burst: 100000},
	}
	gcras := make([]*ratelimit.Limiter, len(limits))
	for i, l := range limits {
		lim, err := ratelimit.New(c, l, ratelimit.WithName(fmt.Sprintf("atomic%d", i)), ratelimit.WithPrefix(fmt.Sprintf("bench:atomic%d:", i)))
		if err != nil {
			panic(err) // limits of this file's own
		}
		gcras[i] = lim
	}
	multi := func(n int) func(ctx context.Context, key string) (bool, error) {
		m, err := ratelimit.NewMulti(gcras[:n]...)
		if err != nil {
			panic(err)
		}
		return func(ctx context.Context, key string) (bool, error) {
			ds, err := m.Allow(ctx, key)
			return err == nil && ds[ratelimit.Strictest(ds)].Allowed, err
		}
	}
	leases, err := ratelimit.NewConcurrency(c, q.burst, time.Minute, ratelimit.WithPrefix("bench:lease:"))
	if err != nil {
		panic(err)
	}
	return []limiter{
		{"redlimit_multi_2", "rate", multi(2)},
		{"redlimit_multi_4", "rate", multi(4)},
		{"redlimit_allowall_2", "rate", func(ctx context.Context, key string) (bool, error) {
			ds, err := ratelimit.AllowAll(ctx, key, gcras[:2]...)
			return err == nil && ds[0].Allowed && ds[1].Allowed, err
		}},
		{"redlimit_gcra", "rate", func(ctx context.Context, key string) (bool, error) {
			d, err := gcras[0].Allow(ctx, key)
			return d.Allowed, err
		}},
		{"redlimit_lease", "", func(ctx context.Context, key string) (bool, error) {
			lease, d, err := leases.Acquire(ctx, key)
			if err != nil || !d.Allowed {
				return false, err
			}
			return true, lease.Release(ctx)
		}},
	}
}
