package ratelimit

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/bindings"
)

// TestBoundsAgreeWithScripts holds checkLimit to the scripts themselves:
// every limit New refuses, the script refuses too (BADARG, or the bindings'
// ArgError), and every limit New accepts, the script takes. (A window
// algorithm's Burst is not sent: New's rule that it equals Rate is its own.) The limits sit
// on and around each bound, plus random ones near them.
func TestBoundsAgreeWithScripts(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	ms, us := time.Millisecond, time.Microsecond
	counts := []int64{-1, 0, 1, 2, 3, 999, 1000, 1001, 9999, 10000, 10001, 1e6, 1e9 - 1, 1e9, 1e9 + 1}
	periods := []time.Duration{-ms, 0, 999 * us, ms, 1500 * us, 2 * ms, time.Second, time.Hour, 1e8 * ms, 1e11*ms - ms, 1e11 * ms, 1e11*ms + ms}
	var limits []Limit
	for _, r := range counts {
		for _, p := range periods {
			for _, b := range []int64{0, 1, r, 1e6, 1e9, 1e9 + 1} {
				limits = append(limits, Limit{Rate: r, Period: p, Burst: b})
			}
		}
	}
	// Around the derived bounds: one unit per µs, and a span of 1e15 µs.
	for _, p := range []int64{1, 7, 1000, 86400000} {
		per := time.Duration(p) * ms
		for _, d := range []int64{-1, 0, 1} {
			limits = append(limits, Limit{Rate: p*1000 + d, Period: per, Burst: 1})
		}
		for _, r := range []int64{1, 3, 7, 1000} {
			unit := (p*1000 + r - 1) / r
			b := int64(1e15) / unit
			for _, d := range []int64{-1, 0, 1} {
				limits = append(limits, Limit{Rate: r, Period: per, Burst: b + d})
			}
			b = int64(1e15) * r / (p * 1000)
			for _, d := range []int64{-1, 0, 1} {
				limits = append(limits, Limit{Rate: r, Period: per, Burst: b + d})
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		limits = append(limits, Limit{
			Rate:   rng.Int64N(2e9) - 5e8,
			Period: time.Duration(rng.Int64N(2e11)) * ms / time.Duration(1+rng.IntN(2)),
			Burst:  rng.Int64N(2e9) - 5e8,
		})
	}

	checked := 0
	for _, alg := range Algorithms() {
		for i, l := range limits {
			if alg.windowed() {
				// The windows take no burst; New refuses any but Rate on
				// purpose (TestNewRefusesLimits), so only the rest is held
				// to the script.
				l.Burst = l.Rate
			}
			goErr := checkLimit(alg, l)
			key := "bounds:" + alg.String() + ":" + string(rune('a'+i%26))
			_, err := scripts[alg].run(ctx, rdb, key, l, 1, time.Time{})
			var ae *bindings.ArgError
			scriptRefused := errors.Is(err, bindings.ErrBadArg) || errors.As(err, &ae)
			if err != nil && !scriptRefused {
				t.Fatalf("%v %v: %v", alg, l, err)
			}
			if (goErr != nil) != scriptRefused {
				t.Errorf("%v %v: New says %v, the script says %v", alg, l, goErr, err)
			}
			checked++
			rdb.Del(ctx, key)
		}
	}
	t.Logf("%d limits checked", checked)
}
