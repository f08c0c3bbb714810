package luatest

import (
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/redlimit/redlimit/tests/scenario"
)

// The leaky bucket's bound is the token bucket's: the level never exceeds
// capacity units and drains at most one µs per µs, a unit being
// ceil(period/rate) >= period/rate µs, so within a closed span at most
// capacity + span*rate/period units get in. Rounding the unit up only
// lowers the rate, so the bound holds for rates that do not divide the
// period too.
func init() {
	lb := func(capacity, rate int, period time.Duration) func(int) []string {
		return func(cost int) []string { return scenario.Args(capacity, rate, period, cost) }
	}
	limiters = append(limiters,
		limiter{script: "leaky_bucket", name: "5 per 1s", args: lb(5, 5, time.Second),
			bound: perPeriod(5, 5, time.Second), maxCost: 3, maxGap: 150 * time.Millisecond},
		// 42857.14 µs a unit, rounded up to 42858.
		limiter{script: "leaky_bucket", name: "7 per 300ms capacity 10", args: lb(10, 7, 300*time.Millisecond),
			bound: perPeriod(10, 7, 300*time.Millisecond), maxCost: 4, maxGap: 40 * time.Millisecond},
		// 333.33 µs a unit, rounded up to 334.
		limiter{script: "leaky_bucket", name: "3 per 1ms", args: lb(3, 3, time.Millisecond),
			bound: perPeriod(3, 3, time.Millisecond), maxCost: 2, maxGap: 300 * time.Microsecond},
	)
}

// TestLeakyBucketMatchesSmoothTokenBucket: a leaky bucket used as a meter is
// the mirror image of a token bucket (room = capacity - water), so where a
// unit is a whole number of µs, both scripts must give the same reply to
// every call in order, with the same PTTL.
func TestLeakyBucketMatchesSmoothTokenBucket(t *testing.T) {
	lbSrc, err := Source("leaky_bucket")
	if err != nil {
		t.Fatal(err)
	}
	tbSrc, err := Source("token_bucket")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		capacity, rate int
		period         time.Duration
		maxCost        int
		maxGap         time.Duration
	}{
		{5, 5, time.Second, 3, 150 * time.Millisecond},
		{10, 4, 100 * time.Millisecond, 6, 30 * time.Millisecond},
		{2, 1, time.Millisecond, 2, 700 * time.Microsecond},
	} {
		for seed := int64(1); seed <= 5; seed++ {
			rng := rand.New(rand.NewSource(seed))
			lb, tb := New(scenario.T0), New(scenario.T0)
			at := int64(scenario.T0)
			for i := 0; i < 300; i++ {
				at += rng.Int63n(tc.maxGap.Microseconds() + 1)
				cost := rng.Intn(tc.maxCost + 2) // above capacity now and then
				now := strconv.FormatInt(at, 10)
				lb.SetTime(at)
				tb.SetTime(at)
				want, err1 := tb.Eval(tbSrc, []string{"k"}, oneCall("token_bucket", scenario.Args(tc.capacity, tc.rate, tc.period, "smooth"), strconv.Itoa(cost), now, "0"))
				got, err2 := lb.Eval(lbSrc, []string{"k"}, scenario.Args(tc.capacity, tc.rate, tc.period, cost, now, 0))
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("%d per %v capacity %d, seed %d: cost %d at %d: token bucket (-) vs leaky bucket (+):\n%s",
						tc.rate, tc.period, tc.capacity, seed, cost, at, diff)
				}
				if w, g := tb.PTTL("k"), lb.PTTL("k"); w != g {
					t.Fatalf("cost %d at %d: PTTL %d for the token bucket, %d for the leaky bucket", cost, at, w, g)
				}
			}
		}
	}
}
