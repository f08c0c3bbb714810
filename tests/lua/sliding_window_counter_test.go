package luatest

import (
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/redlimit/redlimit/tests/scenario"
)

// slidingBound is the most cost the sliding window counter admits within a
// closed span of d = span µs, for a window of W µs:
//
//	limit                          for d = 0
//	limit + floor(limit*(d-1)/W)   for d >= 1
//
// Why: a run of calls is counted in windows k..k+m (m >= 0; each call in its
// judged window, which never moves back). If m = 0, at most limit. Else the
// last call admitted in window k+m, judged e µs into it with the final count
// C of window k+m-1 as prev, had cur + its cost + ceil(C*(W-e)/W) <= limit,
// so window k+m admits at most limit - ceil(C*(W-e)/W) and windows k+m-1 and
// k+m together at most limit + floor(C*e/W) <= limit + floor(limit*e/W).
// Windows k..k+m-2 admit at most limit each. The run starts at or before the
// end of window k (its first call is judged in k, at or after its clock) and
// ends at or after that last judged instant, so d-1 >= (m-1)*W + e, and
// (m-1)*limit + limit + floor(limit*e/W) <= limit + floor(limit*(d-1)/W).
// It is tight for d = W: limit in the last µs of a window, then, as that
// count's weight decays, limit - ceil(limit/W) more by the next window's last
// µs.
func slidingBound(limit int, window time.Duration) func(time.Duration) int {
	return func(span time.Duration) int {
		d, w := span.Microseconds(), window.Microseconds()
		if d == 0 {
			return limit
		}
		return limit + int(int64(limit)*(d-1)/w)
	}
}

func init() {
	swc := func(limit int, window time.Duration) func(int) []string {
		return func(cost int) []string { return scenario.Args(limit, window, cost) }
	}
	limiters = append(limiters,
		// 300 ms / 7 is not a whole number of µs.
		limiter{script: "sliding_window_counter", name: "7 per 300ms", args: swc(7, 300*time.Millisecond),
			bound: slidingBound(7, 300*time.Millisecond), maxCost: 4, maxGap: 40 * time.Millisecond},
		limiter{script: "sliding_window_counter", name: "3 per 1ms", args: swc(3, time.Millisecond),
			bound: slidingBound(3, time.Millisecond), maxCost: 2, maxGap: 300 * time.Microsecond},
	)
}

func TestSlidingWindowCounterAlignedWindow(t *testing.T) {
	eachAlignedWindow(t, "sliding_window_counter")
}

// TestSlidingWindowCounterMatchesModel compares every reply and every
// stored state with the big-integer model, on windows and limits large
// enough that count*window is far beyond 2^53, in order and with late
// callers (up to half a window, at most the 60 s bound).
func TestSlidingWindowCounterMatchesModel(t *testing.T) {
	for _, cfg := range []struct {
		limit  int64
		window time.Duration
	}{
		{5, time.Second},
		{7, 300 * time.Millisecond},
		{1_000_000, 24 * time.Hour},
		{999_999_937, 99_999_999_989 * time.Millisecond},
		{1_000_000_000, time.Millisecond},
		{3, 7 * time.Millisecond},
	} {
		W := cfg.window.Microseconds()
		for seed := int64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewSource(seed))
			for _, late := range []bool{false, true} {
				w := newTwin(t, "sliding_window_counter", scenario.T0)
				latest := int64(scenario.T0)
				for i := 0; i < 300; i++ {
					// Gaps of up to a quarter window, but at most 58 days, so
					// 300 calls stay below the largest clock, 2^52 µs.
					latest += rng.Int63n(min(W/4, 5e12) + 1)
					now := latest
					if late {
						now -= rng.Int63n(min(W/2, maxSkew) + 1)
					}
					w.setTime(latest)
					var cost int64
					switch rng.Intn(4) {
					case 0:
						cost = 0
					case 1:
						cost = rng.Int63n(cfg.limit + 2)
					default:
						cost = rng.Int63n(cfg.limit/4 + 2)
					}
					w.call([]string{"k"}, scenario.Args(cfg.limit, cfg.window, cost, now, 0))
				}
			}
		}
	}
}

// TestSlidingWindowCounterWorstCase admits limit in the last µs of a window
// and then, one call per µs-exact retry, everything the decaying estimate
// allows: within one window length it reaches 2*limit - 1 (the header's
// worst case, and slidingBound at d = W), and never more.
func TestSlidingWindowCounterWorstCase(t *testing.T) {
	src, err := Source("sliding_window_counter")
	if err != nil {
		t.Fatal(err)
	}
	const limit = 10
	window := time.Second
	W := window.Microseconds()
	r := New(scenario.T0)
	first := int64(scenario.T0) + W - 1
	total := 0
	for now := first; now <= first+W; {
		r.SetTime(now)
		got, err := r.Eval(src, []string{"k"}, scenario.Args(limit, window, 1, now, 0))
		if err != nil {
			t.Fatal(err)
		}
		reply := got.([]any)
		if reply[0] == int64(1) {
			total++
			if now == first && total < limit {
				continue
			}
			now++
			continue
		}
		now += reply[2].(int64) * 1000
	}
	if want := slidingBound(limit, window)(window); total != want || want != 2*limit-1 {
		t.Errorf("admitted %d within %v from a window's last µs, want %d = 2*limit-1", total, window, want)
	}
}

// TestSlidingWindowCounterLaggingServerClock: as for fixed_window, the key
// lasts until the counts weigh 0 by the server's clock too.
func TestSlidingWindowCounterLaggingServerClock(t *testing.T) {
	src, err := Source("sliding_window_counter")
	if err != nil {
		t.Fatal(err)
	}
	r := New(scenario.T0)
	at := func(ms int64) string { return strconv.FormatInt(scenario.T0+ms*1000, 10) }
	// The caller is 600 ms ahead: 1400 ms left for it, 2000 ms for the
	// server, plus the 60 s grace of a caller clock.
	windowStep(t, r, src, scenario.Args(2, 1000, 2, at(600), 0), windowReply(1, 0, 0, 1400), 62000)
	r.SetTime(scenario.T0 + 1_500_000)
	// At 1.9 s prev=2 weighs ceil(0.2) = 1; the server is at 1.5 s.
	windowStep(t, r, src, scenario.Args(2, 1000, 1, at(1900), 0), windowReply(1, 0, 0, 1100), 61500)
	windowStep(t, r, src, scenario.Args(2, 1000, 1, at(1950), 0), windowReply(0, 0, 50, 1050), 61500)
}
