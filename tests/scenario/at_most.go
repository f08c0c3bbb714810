package scenario

import "time"

// gcra.lua's take at_most (redis_rate's AllowAtMost, once
// gcra_at_most.lua's): Args are burst, rate, period, at_most and n; a
// reply is taken, remaining, retry after and reset after.
func init() {
	a := func(burst, rate int, period time.Duration, n int) []string {
		return Args(burst, rate, period, "at_most", n)
	}
	// T is a reply of take at_most: taken, remaining, retry after and
	// reset after in ms.
	T := func(taken, remaining, retryMs, resetMs int64) []int64 {
		return []int64{taken, remaining, retryMs, resetMs}
	}
	sec, ms := time.Second, time.Millisecond
	register(Spec{Script: "gcra"},
		Scenario{
			Name: "at_most takes what is left, up to n, or nothing",
			Keys: []string{"gam:{a}"},
			// T = 100 ms, burst 5: the TAT may run at most 500 ms ahead.
			Steps: []Step{
				{At: 0, Args: a(5, 10, sec, 3), Want: T(3, 2, 0, 300), TTL: []int64{300}},
				// 2 left: n = 5 takes them.
				{At: 0, Args: a(5, 10, sec, 5), Want: T(2, 0, 0, 500), TTL: []int64{500}},
				// None left: nothing taken, and one passes in one interval.
				{At: 0, Args: a(5, 10, sec, 1), Want: T(0, 0, 100, 500), TTL: []int64{500}},
				// 350 ms ahead: 1 whole request left.
				{At: 150 * ms, Args: a(5, 10, sec, 4), Want: T(1, 0, 0, 450), TTL: []int64{450}},
				// n far above burst is no error: nothing left, 50 ms to wait.
				{At: 150 * ms, Args: a(5, 10, sec, 1000000000), Want: T(0, 0, 50, 450), TTL: []int64{450}},
				// The TAT (600 ms) passed: a full burst, no more.
				{At: 2 * sec, Args: a(5, 10, sec, 7), Want: T(5, 0, 0, 500), TTL: []int64{500}},
			},
		},
		Scenario{
			Name: "at_most: a state take all wrote is the same limit, and a changed one applies from its last write",
			Keys: []string{"gam:{b}"},
			// As gcra.lua at 1 per s leaves a key after one call: its TAT is
			// 1 s ahead, written at t0.
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "gam:{b}", Type: "string", Vals: []string{GCRAState(t0+1000000, 1000000, 1000000)}, TTL: 60000}}
			},
			Steps: []Step{
				// 2 per s: the one interval ahead is one of 500 ms now.
				{At: 0, Args: a(3, 2, sec, 9), Want: T(2, 0, 0, 1500), TTL: []int64{1500}},
				{At: 0, Args: a(3, 2, sec, 9), Want: T(0, 0, 500, 1500), TTL: []int64{1500}},
			},
		},
		Scenario{
			Name:        "at_most with a caller clock: waits count from it, the key lives Grace longer",
			Keys:        []string{"gam:{c}"},
			CallerClock: true,
			Steps: []Step{
				{At: 10 * sec, Args: a(2, 1, sec, 2), Want: T(2, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				// Stamped 9 s: the TAT is 3 s ahead of it.
				{At: 9 * sec, Args: a(2, 1, sec, 1), Want: T(0, 0, 2000, 3000), TTL: []int64{Grace + 2000}},
				{At: 11 * sec, Args: a(2, 1, sec, 2), Want: T(1, 0, 0, 2000), TTL: []int64{Grace + 2000}},
			},
		},
		Scenario{
			Name:    "at_most: bad input and foreign state are errors and change nothing",
			Keys:    []string{"gam:{d}"},
			Strings: map[string]string{"gam:{d}": TokenBucketState(T0, 5)},
			Steps: []Step{
				{Args: Args(5, 10, 1000, "at_most"), Err: "BADARG takes 1 key and 5 arguments, then 1 to 64 requests of 2 (cost, deadline), got 1 and 6"},
				{Args: append(a(5, 10, sec, 1), "0"), Err: "BADARG takes 1 key and 5 arguments, then 1 to 64 requests of 2 (cost, deadline), got 1 and 8"},
				{Args: a(5, 1001, ms, 1), Err: "BADARG rate must be at most one per µs (period*1000)"},
				{Args: a(1000000000, 1, 1001*ms, 1), Err: "BADARG burst*period/rate must be at most 1e15 µs (31 years)"},
				{Args: a(5, 10, sec, 1), Now: "x", Err: "BADARG now"},
				// Expired, the key is not read: no BADSTATE.
				{Args: a(5, 10, sec, 1), DeadlineIn: -sec, Want: X(), TTL: []int64{-1}},
				// A token bucket's state is not GCRA's, for a peek too.
				{Args: a(5, 10, sec, 1), Err: "BADSTATE", TTL: []int64{-1}},
				{Args: a(5, 10, sec, 0), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name: "issue 15.4: at_most run at or after its deadline takes nothing",
			Keys: []string{"gam:{e}"},
			Steps: []Step{
				{Args: a(5, 10, sec, 3), DeadlineIn: -sec, Want: X(), TTL: []int64{NoKey}},
				{Args: a(5, 10, sec, 3), DeadlineIn: 10 * sec, Want: T(3, 2, 0, 300), TTL: []int64{300}},
				{Args: a(5, 10, sec, 3), DeadlineIn: -time.Microsecond, Want: X(), TTL: []int64{300}},
			},
		},
		Scenario{
			Name: "issue 15.2: at_most: a state dated past TIME + 60 s is refused and left as it is",
			Keys: []string{"gam:{far}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "gam:{far}", Type: "string", Vals: []string{GCRAState(t0+60000001+100000, 100000, 100000)}, TTL: 86400000}}
			},
			Steps: []Step{
				{Args: a(5, 10, sec, 1), Err: "BADSTATE", TTL: []int64{86400000}},
			},
		},
	)
}
