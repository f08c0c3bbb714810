package bench

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/throttled/throttled/v2"
	goredisstore "github.com/throttled/throttled/v2/store/goredisstore.v9"
	ulimiter "github.com/ulule/limiter/v3"
	ulule "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/redlimit/redlimit/bindings"
	"github.com/redlimit/redlimit/ratelimit"
)

// quota is one limit, set the same way on every limiter: rate per second
// at the steady pace, and burst that may pass at once. The window
// limiters count burst per window of burst/rate seconds, which is the same
// average rate.
type quota struct {
	rate, burst int64
}

func (q quota) window() time.Duration {
	return time.Duration(q.burst) * time.Second / time.Duration(q.rate)
}

// limiter makes one decision of cost 1 on key.
type limiter struct {
	name string
	// algo says what most bounds: "rate" (burst + rate × elapsed),
	// "aligned" (burst per epoch-aligned window touched) or "rolling"
	// (burst per window length started).
	algo   string
	decide func(ctx context.Context, key string) (allowed bool, err error)
}

// viaFunctions returns two of redlimit's scripts called through the Redis
// Functions library (bindings.WithFunctions), to set FCALL beside EVALSHA.
func viaFunctions(c *redis.Client, q quota) []limiter {
	fc := bindings.WithFunctions(c)
	var out []limiter
	for _, l := range ours(fc, q, false) {
		if l.name == "redlimit_token_bucket" || l.name == "redlimit_gcra" {
			l.name += "_fcall"
			out = append(out, l)
		}
	}
	return out
}

// ours returns redlimit's six scripts as a user calls them: through the
// ratelimit package, with the server's clock or each caller's own. The
// window algorithms count burst per window of burst/rate seconds.
func ours(c redis.Scripter, q quota, callerClock bool) []limiter {
	perSecond := ratelimit.Limit{Rate: q.rate, Period: time.Second, Burst: q.burst}
	perWindow := ratelimit.Limit{Rate: q.burst, Period: q.window(), Burst: q.burst}
	var out []limiter
	for _, l := range []struct {
		alg   ratelimit.Algorithm
		limit ratelimit.Limit
		bound string
	}{
		{ratelimit.TokenBucket, perSecond, "rate"},
		{ratelimit.GCRA, perSecond, "rate"},
		{ratelimit.LeakyBucket, perSecond, "rate"},
		{ratelimit.FixedWindow, perWindow, "aligned"},
		{ratelimit.SlidingWindowLog, perWindow, "rolling"},
		{ratelimit.SlidingWindowCounter, perWindow, "aligned"},
	} {
		opts := []ratelimit.Option{ratelimit.WithAlgorithm(l.alg), ratelimit.WithPrefix("bench:")}
		if callerClock {
			opts = append(opts, ratelimit.WithClock(time.Now))
		}
		lim, err := ratelimit.New(c, l.limit, opts...)
		if err != nil {
			panic(err) // a quota of this file's own
		}
		out = append(out, limiter{"redlimit_" + l.alg.String(), l.bound, func(ctx context.Context, key string) (bool, error) {
			d, err := lim.Allow(ctx, key)
			return d.Allowed, err
		}})
	}
	return out
}

//go:embed testdata/redis_docs_token_bucket.lua
var docsTokenBucketSource string

var docsTokenBucket = redis.NewScript(docsTokenBucketSource)

// peers returns the other limiters at the same quota, each used as its
// documentation shows.
func peers(c *redis.Client, q quota) ([]limiter, error) {
	// go-redis/redis_rate: GCRA in one Lua script, the server's clock.
	rr := redis_rate.NewLimiter(c)
	rrLimit := redis_rate.Limit{Rate: int(q.rate), Burst: int(q.burst), Period: time.Second}

	// ulule/limiter with its Redis store: a fixed window that starts at a
	// key's first hit (INCRBY + PEXPIRE in one Lua script).
	ustore, err := ulule.NewStoreWithOptions(c, ulimiter.StoreOptions{Prefix: "ulule"})
	if err != nil {
		return nil, fmt.Errorf("ulule store: %w", err)
	}
	ul := ulimiter.New(ustore, ulimiter.Rate{Period: q.window(), Limit: q.burst})

	// throttled with its go-redis v9 store: GCRA computed in the client,
	// TIME+GET in a pipeline, then SETNX+EXPIRE or a compare-and-swap
	// EVAL, retried up to 10 times. MaxBurst counts the requests after the
	// first, so MaxBurst = burst-1 lets burst pass at once.
	tstore, err := goredisstore.NewCtx(c, "throttled:")
	if err != nil {
		return nil, fmt.Errorf("throttled store: %w", err)
	}
	th, err := throttled.NewGCRARateLimiterCtx(tstore, throttled.RateQuota{
		MaxRate: throttled.PerSec(int(q.rate)), MaxBurst: int(q.burst) - 1})
	if err != nil {
		return nil, fmt.Errorf("throttled: %w", err)
	}

	// The Redis docs' token bucket: rate tokens a second as one token per
	// 1/rate s, the caller's clock in float seconds, as its Go page does.
	interval := 1 / float64(q.rate)

	return []limiter{
		{"redis_rate", "rate", func(ctx context.Context, key string) (bool, error) {
			r, err := rr.Allow(ctx, key, rrLimit)
			if err != nil {
				return false, err
			}
			return r.Allowed > 0, nil
		}},
		{"ulule_limiter", "rolling", func(ctx context.Context, key string) (bool, error) {
			r, err := ul.Get(ctx, key)
			return !r.Reached, err
		}},
		{"throttled", "rate", func(ctx context.Context, key string) (bool, error) {
			limited, _, err := th.RateLimitCtx(ctx, key, 1)
			return !limited, err
		}},
		{"redis_docs_token_bucket", "rate", func(ctx context.Context, key string) (bool, error) {
			secs := float64(time.Now().UnixMicro()) / 1e6
			r, err := docsTokenBucket.Run(ctx, c, []string{key}, q.burst, 1, interval, secs).Int64Slice()
			if err != nil {
				return false, err
			}
			return r[0] == 1, nil
		}},
	}, nil
}

// most is what the algorithm may admit over [start, end] (µs).
func most(algo string, q quota, start, end int64) float64 {
	w := q.window().Microseconds()
	switch algo {
	case "aligned":
		return float64(q.burst * (end/w - start/w + 1))
	case "rolling":
		return float64(q.burst * ((end-start)/w + 1))
	default:
		return float64(q.burst) + float64(q.rate)*float64(end-start)/1e6
	}
}
