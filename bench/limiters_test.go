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

	"github.com/redlimit/redlimit/ratelimit"
)

// quota is one limit, set the same way on every limiter: rate per period
// at the steady pace, and burst that may pass at once; the window limiters
// count windowLimit per window, which newQuota makes burst per window of
// burst/rate periods, the same average rate.
type quota struct {
	rate, burst int64
	period      time.Duration
	windowLimit int64
	windowLen   time.Duration
}

func newQuota(rate, burst int64, period time.Duration) quota {
	return quota{rate, burst, period, burst, time.Duration(burst) * period / time.Duration(rate)}
}

func (q quota) window() time.Duration { return q.windowLen }

// limiter makes one decision of cost 1 on key: whether it passed, and
// whether a local deny cache answered without asking Redis.
type limiter struct {
	name string
	// algo says what most bounds: "rate" (burst + rate × elapsed),
	// "aligned" (burst per epoch-aligned window touched) or "rolling"
	// (burst per window length started).
	algo   string
	decide func(ctx context.Context, key string) (allowed, cached bool, err error)
}

// Every limiter keeps its state under a prefix of its own, and every
// prefix makes a Redis key of the same length from the same caller key
// ("rl:{user:000001}", "rate:user:000001", "ulul:user:000001", ...), so that
// the memory per key compares state layouts, not key names. redis_rate's
// prefix is its own ("rate:").
const (
	oursPrefix      = "rl:"
	ululePrefix     = "ulul" // ulule adds ":"
	throttledPrefix = "thrt:"
	docsPrefix      = "docs:"
)

// ourAlgorithms are the six scripts (token_bucket.lua's interval refill
// runs the same script as its smooth refill).
var ourAlgorithms = []ratelimit.Algorithm{
	ratelimit.TokenBucket, ratelimit.GCRA, ratelimit.LeakyBucket,
	ratelimit.FixedWindow, ratelimit.SlidingWindowLog, ratelimit.SlidingWindowCounter,
}

// variant is how a redlimit row calls its script.
type variant struct {
	suffix string // "", "_ap", "_cache", "_rueidis", ...
	opts   []ratelimit.Option
}

// denyCacheSize is the deny cache of the "_cache" rows.
const denyCacheSize = 10000

// withoutCoalescing makes BenchmarkDecision's "_nobatch" rows: each
// decision a script call of its own, batched neither with a hot key's
// other requests nor with other keys', beside the default rows, which
// batch both.
var withoutCoalescing = []ratelimit.Option{ratelimit.WithoutCoalescing()}

var (
	plain     = variant{}
	withCache = variant{"_cache", []ratelimit.Option{ratelimit.WithDenyCache(denyCacheSize)}}
	// viaFunctions names the rows whose client is bindings.WithFunctions.
	viaFunctions = variant{suffix: "_fcall"}
)

// ours returns redlimit's six scripts as a user calls them, through the
// ratelimit package over c (a client, or an AutoPipeliner for the "_ap"
// rows), with the server's clock or each caller's own. The window
// algorithms count burst per window of burst/rate periods.
func ours(c ratelimit.Client, q quota, callerClock bool, v variant) []limiter {
	perPeriod := ratelimit.Limit{Rate: q.rate, Period: q.period, Burst: q.burst}
	perWindow := ratelimit.Limit{Rate: q.windowLimit, Period: q.window(), Burst: q.windowLimit}
	var out []limiter
	for _, alg := range ourAlgorithms {
		limit, bound := perPeriod, "rate"
		switch alg {
		case ratelimit.FixedWindow, ratelimit.SlidingWindowCounter:
			limit, bound = perWindow, "aligned"
		case ratelimit.SlidingWindowLog:
			limit, bound = perWindow, "rolling"
		}
		opts := append([]ratelimit.Option{ratelimit.WithAlgorithm(alg), ratelimit.WithPrefix(oursPrefix)}, v.opts...)
		if callerClock {
			opts = append(opts, ratelimit.WithClock(time.Now))
		}
		lim, err := ratelimit.New(c, "bench", limit, opts...)
		if err != nil {
			panic(fmt.Sprintf("%v %v: %v", alg, limit, err)) // a quota of this file's own
		}
		out = append(out, limiter{"redlimit_" + alg.String() + v.suffix, bound, func(ctx context.Context, key string) (bool, bool, error) {
			d, err := lim.Allow(ctx, key)
			return d.Allowed, d.Cached, err
		}})
	}
	return out
}

//go:embed testdata/redis_docs_token_bucket.lua
var docsTokenBucketSource string

var docsTokenBucket = redis.NewScript(docsTokenBucketSource)

// floorScript is Redis's floor for a decision: one EVALSHA of a script that
// returns 1, with the key as its one KEYS entry.
var floorScript = redis.NewScript("return 1")

// floor returns the floor as a limiter over c.
func floor(c redis.Scripter, name string) limiter {
	return limiter{name, "", func(ctx context.Context, key string) (bool, bool, error) {
		err := floorScript.EvalSha(ctx, c, []string{key}).Err()
		return err == nil, false, err
	}}
}

// rediser is what redis_rate needs: a client or an AutoPipeliner.
type rediser interface {
	redis.Scripter
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}

// redisRate returns go-redis/redis_rate over c: GCRA in one Lua script, the
// server's clock.
func redisRate(c rediser, q quota, name string) limiter {
	rr := redis_rate.NewLimiter(c)
	limit := redis_rate.Limit{Rate: int(q.rate), Burst: int(q.burst), Period: q.period}
	return limiter{name, "rate", func(ctx context.Context, key string) (bool, bool, error) {
		r, err := rr.Allow(ctx, key, limit)
		if err != nil {
			return false, false, err
		}
		return r.Allowed > 0, false, nil
	}}
}

// peers returns the other limiters at the same quota, each used as its
// documentation shows.
func peers(c *redis.Client, q quota) ([]limiter, error) {
	// ulule/limiter with its Redis store: a fixed window that starts at a
	// key's first hit (INCRBY + PEXPIRE in one Lua script).
	ustore, err := ulule.NewStoreWithOptions(c, ulimiter.StoreOptions{Prefix: ululePrefix})
	if err != nil {
		return nil, fmt.Errorf("ulule store: %w", err)
	}
	ul := ulimiter.New(ustore, ulimiter.Rate{Period: q.window(), Limit: q.windowLimit})

	// throttled with its go-redis v9 store: GCRA computed in the client,
	// TIME+GET in a pipeline, then SETNX+EXPIRE or a compare-and-swap
	// EVAL, retried up to 10 times. MaxBurst counts the requests after the
	// first, so MaxBurst = burst-1 lets burst pass at once.
	tstore, err := goredisstore.NewCtx(c, throttledPrefix)
	if err != nil {
		return nil, fmt.Errorf("throttled store: %w", err)
	}
	perPeriod := throttled.Rate{}
	switch q.period {
	case time.Second:
		perPeriod = throttled.PerSec(int(q.rate))
	case time.Hour:
		perPeriod = throttled.PerHour(int(q.rate))
	default:
		return nil, fmt.Errorf("throttled: no rate per %v", q.period)
	}
	th, err := throttled.NewGCRARateLimiterCtx(tstore, throttled.RateQuota{MaxRate: perPeriod, MaxBurst: int(q.burst) - 1})
	if err != nil {
		return nil, fmt.Errorf("throttled: %w", err)
	}

	// The Redis docs' token bucket: rate tokens a period as one token per
	// period/rate, the caller's clock in float seconds, as its Go page does.
	interval := q.period.Seconds() / float64(q.rate)

	return []limiter{
		redisRate(c, q, "redis_rate"),
		{"ulule_limiter", "rolling", func(ctx context.Context, key string) (bool, bool, error) {
			r, err := ul.Get(ctx, key)
			return !r.Reached, false, err
		}},
		{"throttled", "rate", func(ctx context.Context, key string) (bool, bool, error) {
			limited, _, err := th.RateLimitCtx(ctx, key, 1)
			return !limited, false, err
		}},
		{"redis_docs_token_bucket", "rate", func(ctx context.Context, key string) (bool, bool, error) {
			secs := float64(time.Now().UnixMicro()) / 1e6
			r, err := docsTokenBucket.Run(ctx, c, []string{docsPrefix + key}, q.burst, 1, interval, secs).Int64Slice()
			if err != nil {
				return false, false, err
			}
			return r[0] == 1, false, nil
		}},
	}, nil
}

// most is what the algorithm may admit over [start, end] (µs).
func most(algo string, q quota, start, end int64) float64 {
	w := q.window().Microseconds()
	switch algo {
	case "aligned":
		return float64(q.windowLimit * (end/w - start/w + 1))
	case "rolling":
		return float64(q.windowLimit * ((end-start)/w + 1))
	default:
		return float64(q.burst) + float64(q.rate)*float64(end-start)/float64(q.period.Microseconds())
	}
}
