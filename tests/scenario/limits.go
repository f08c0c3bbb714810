package scenario

import "time"

// What each script does when its limit, rate, burst, capacity, period or
// window changes while a key lives (issue 8, case 3): never a lockout past
// the new limit's horizon, never a denial of what the state leaves room for
// when a limit is raised, never a free burst when it is lowered. Each
// header says the same in words.
func init() {
	sec, ms := time.Second, time.Millisecond
	tb := func(capacity, rate int, period time.Duration, cost int) []string {
		return Args(capacity, rate, period, "smooth", cost)
	}
	register(Spec{Script: "token_bucket"}, Scenario{
		Name: "limits change while the key lives",
		Keys: []string{"tb:{limits}"},
		Steps: []Step{
			{Args: tb(10, 5, sec, 10), Want: R(true, 0, 0, 2000), TTL: []int64{2000}},
			// 1 s later 5 tokens are due, but the capacity is now 4: no more.
			{At: sec, Args: tb(4, 5, sec, 1), Want: R(true, 3, 0, 200), TTL: []int64{200}},
			// Raised to 20: the 3 tokens are there, and it fills at 5/s.
			{At: sec, Args: tb(20, 5, sec, 3), Want: R(true, 0, 0, 4000), TTL: []int64{4000}},
			// A slower rate credits from the last credit at the new pace.
			{At: 2 * sec, Args: tb(20, 1, sec, 2), Want: R(false, 1, 1000, 19000), TTL: []int64{3000}},
			{At: 2 * sec, Args: tb(20, 1, sec, 1), Want: R(true, 0, 0, 20000), TTL: []int64{20000}},
			// A faster one too: 50 ms at 100/s is 5 tokens.
			{At: 2050 * ms, Args: tb(20, 100, sec, 5), Want: R(true, 0, 0, 200), TTL: []int64{200}},
		},
	})
	register(Spec{Script: "leaky_bucket", CostArg: 3}, Scenario{
		Name: "limits change while the key lives",
		Keys: []string{"lb:{limits}"},
		Steps: []Step{
			// 10 units of 200 ms: 2 s of water.
			{Args: Args(10, 5, sec, 10), Want: R(true, 0, 0, 2000), TTL: []int64{2000}},
			// At 1 per s from the last pour, the 10 units poured then are 10 s
			// of water, 9 s after 1 s: a lower rate frees no room.
			{At: sec, Args: Args(10, 1, sec, 1), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
			// Capacity 3: the 10 units are capped at a full bucket, 3 s, so
			// the next unit waits 1 s, not 8.
			{At: sec, Args: Args(3, 1, sec, 1), Want: R(false, 0, 1000, 3000), TTL: []int64{10000}},
			// 10 per s: the 10 units are 1 s of water at 1 s (a full bucket),
			// 500 ms at 1.5 s: room for 5.
			{At: 1500 * ms, Args: Args(10, 10, sec, 4), Want: R(true, 1, 0, 900), TTL: []int64{900}},
		},
	})
	register(Spec{Script: "gcra"}, Scenario{
		Name: "limits change while the key lives",
		Keys: []string{"gcra:{limits}"},
		Steps: []Step{
			// TAT 2 s ahead: 10 intervals of 200 ms.
			{Args: Args(10, 5, sec, "all", 10), Want: R(true, 0, 0, 2000), TTL: []int64{2000}},
			// At 1 per s from the last write, its 10 intervals are 10 s: the
			// TAT is 9 s ahead at 1 s. A lower rate frees no room.
			{At: sec, Args: Args(10, 1, sec, "all", 1), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
			// Burst 3: the lead is capped at a full burst, 3 s, so the next
			// request waits 1 s, not 8.
			{At: sec, Args: Args(3, 1, sec, "all", 1), Want: R(false, 0, 1000, 3000), TTL: []int64{10000}},
			// 10 per s: the lead is 1 s (a full burst) from 1 s, 500 ms at
			// 1.5 s: room for 5.
			{At: 1500 * ms, Args: Args(10, 10, sec, "all", 4), Want: R(true, 1, 0, 900), TTL: []int64{900}},
		},
	})
	fw := func(limit int, window time.Duration, cost int) []string { return Args(limit, window, cost) }
	register(fixedWindowSpec, Scenario{
		Name: "limits change while the key lives",
		Keys: []string{"fw:{limits}"},
		Steps: []Step{
			{Args: fw(5, sec, 5), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
			// A raised limit admits the difference at once.
			{At: 500 * ms, Args: fw(8, sec, 3), Want: R(true, 0, 0, 500), TTL: []int64{500}},
			// A lowered one denies until the window ends, no longer.
			{At: 500 * ms, Args: fw(4, sec, 1), Want: R(false, 0, 500, 500), TTL: []int64{500}},
			// A longer window holds the 8 calls so far: no free burst.
			{At: 600 * ms, Args: fw(10, 10*sec, 2), Want: R(true, 0, 0, 9400), TTL: []int64{9400}},
			// A shorter one counts them in its window that holds the newest
			// (600 ms), and only there.
			{At: 650 * ms, Args: fw(10, 100*ms, 1), Want: R(false, 0, 50, 50), TTL: []int64{9350}},
			{At: 700 * ms, Args: fw(10, 100*ms, 1), Want: R(true, 9, 0, 100), TTL: []int64{100}},
		},
	})
	register(Spec{Script: "sliding_window_counter", CostArg: 2}, Scenario{
		Name: "limits change while the key lives",
		Keys: []string{"swc:{limits}"},
		Steps: []Step{
			{Args: fw(5, sec, 5), Want: R(true, 0, 0, 2000), TTL: []int64{2000}},
			// A raised limit admits the difference at once.
			{At: 500 * ms, Args: fw(8, sec, 3), Want: R(true, 0, 0, 1500), TTL: []int64{1500}},
			// Lowered to 4: the 8 must weigh 3 or less, 625 ms into the next
			// window.
			{At: 500 * ms, Args: fw(4, sec, 1), Want: R(false, 0, 1125, 1500), TTL: []int64{1500}},
			// A longer window holds the 8 calls so far: no free burst.
			{At: 600 * ms, Args: fw(10, 10*sec, 2), Want: R(true, 0, 0, 19400), TTL: []int64{19400}},
			// A shorter one counts them in its window that holds the newest
			// (600 ms); they weigh as the previous count in the next.
			{At: 650 * ms, Args: fw(10, 100*ms, 1), Want: R(false, 0, 60, 150), TTL: []int64{19350}},
			{At: 750 * ms, Args: fw(10, 100*ms, 5), Want: R(true, 0, 0, 150), TTL: []int64{150}},
		},
	})
	register(Spec{Script: "sliding_window_log", CostArg: 2}, Scenario{
		Name: "limits change while the key lives",
		Keys: []string{"swl:{limits}"},
		Steps: []Step{
			{Args: fw(5, sec, 5), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
			// A raised limit admits the difference at once.
			{At: 500 * ms, Args: fw(8, sec, 3), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
			// Lowered to 4: the 4th newest (of 0 s) must leave first.
			{At: 500 * ms, Args: fw(4, sec, 1), Want: R(false, 0, 500, 1000), TTL: []int64{1000}},
			// A longer window counts every member still in the log.
			{At: 600 * ms, Args: fw(10, 10*sec, 2), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
			// A shorter one counts only what is inside it; an admit then drops
			// the members that left it, for good.
			{At: 650 * ms, Args: fw(10, 100*ms, 1), Want: R(true, 7, 0, 100), TTL: []int64{100}},
			{At: 700 * ms, Args: fw(10, 10*sec, 10), Want: R(false, 7, 9950, 9950), TTL: []int64{50}},
		},
	})
}
