package scenario

import "time"

func init() {
	// swl is ARGV for sliding_window_log without the clock.
	swl := func(limit int, window time.Duration, cost int) []string {
		return Args(limit, window, cost)
	}
	sec := time.Second
	us := time.Microsecond
	register(Spec{Script: "sliding_window_log", CostArg: 2},
		Scenario{
			Name: "burst, deny, and members leave the window at exact instants",
			Keys: []string{"swl:{a}"},
			Steps: []Step{
				{At: 0, Args: swl(3, sec, 1), Want: R(true, 2, 0, 1000), TTL: []int64{1000}},
				{At: 100 * ms, Args: swl(3, sec, 1), Want: R(true, 1, 0, 1000), TTL: []int64{1000}},
				{At: 200 * ms, Args: swl(3, sec, 1), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				// Full: the member of 0 ms leaves at 1000 ms; the newest, of 200 ms, at 1200 ms.
				{At: 200 * ms, Args: swl(3, sec, 1), Want: R(false, 0, 800, 1000), TTL: []int64{1000}},
				{At: 999 * ms, Args: swl(3, sec, 1), Want: R(false, 0, 1, 201), TTL: []int64{201}},
				// At 1000 ms the member of 0 ms has t = now - window: out.
				{At: 1000 * ms, Args: swl(3, sec, 1), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				// A peek answers for a cost of 1 and is idempotent: 100 ms is the oldest live.
				{At: 1050 * ms, Args: swl(3, sec, 0), Want: R(false, 0, 50, 950), TTL: []int64{950}},
				{At: 1050 * ms, Args: swl(3, sec, 0), Want: R(false, 0, 50, 950), TTL: []int64{950}},
				// At 1200 ms both 100 and 200 ms are out; 1000 ms stays.
				{At: 1200 * ms, Args: swl(3, sec, 2), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				// One must leave: 1000 ms, at 2000 ms.
				{At: 1200 * ms, Args: swl(3, sec, 1), Want: R(false, 0, 800, 1000), TTL: []int64{1000}},
				// Three must leave: the last of them is of 1200 ms.
				{At: 1200 * ms, Args: swl(3, sec, 3), Want: R(false, 0, 1000, 1000), TTL: []int64{1000}},
				// A cost above limit can never pass: -1, not a fake wait.
				{At: 1200 * ms, Args: swl(3, sec, 4), Want: R(false, 0, -1, 1000), TTL: []int64{1000}},
				{At: 2200 * ms, Args: swl(3, sec, 3), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				// Expired: a peek creates nothing.
				{At: 3200 * ms, Args: swl(3, sec, 0), Want: R(true, 3, 0, 0), TTL: []int64{NoKey}},
				{At: 3200 * ms, Args: swl(3, sec, 4), Want: R(false, 3, -1, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name: "calls in one microsecond add distinct members",
			Keys: []string{"swl:{b}"},
			Steps: []Step{
				{At: 0, Args: swl(5, sec, 2), Want: R(true, 3, 0, 1000), TTL: []int64{1000}},
				{At: 0, Args: swl(5, sec, 1), Want: R(true, 2, 0, 1000), TTL: []int64{1000}},
				{At: 0, Args: swl(5, sec, 2), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				// Five members, all of 0 ms: a collision would have left room.
				{At: 0, Args: swl(5, sec, 1), Want: R(false, 0, 1000, 1000), TTL: []int64{1000}},
				{At: 500 * ms, Args: swl(5, sec, 5), Want: R(false, 0, 500, 500), TTL: []int64{500}},
				// All five leave together.
				{At: 1000 * ms, Args: swl(5, sec, 5), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
			},
		},
		Scenario{
			Name:        "sub-second windows never give a zero TTL",
			Keys:        []string{"swl:{c}"},
			CallerClock: true,
			Steps: []Step{
				{At: 0, Args: swl(2, 100*ms, 2), Want: R(true, 0, 0, 100), TTL: []int64{Grace + 100}},
				{At: 50 * ms, Args: swl(2, 100*ms, 1), Want: R(false, 0, 50, 50), TTL: []int64{Grace + 50}},
				{At: 100 * ms, Args: swl(2, 100*ms, 1), Want: R(true, 1, 0, 100), TTL: []int64{Grace + 100}},
				{At: sec, Args: swl(1, ms, 1), Want: R(true, 0, 0, 1), TTL: []int64{Grace + 1}},
				// 500 µs left, rounded up to 1 ms. (A PTTL half a ms after a
				// write rounds differently on each server: not compared.)
				{At: sec + 500*us, Args: swl(1, ms, 1), Want: R(false, 0, 1, 1)},
				{At: sec + 999*us, Args: swl(1, ms, 1), Want: R(false, 0, 1, 1)},
				{At: sec + 1000*us, Args: swl(1, ms, 1), Want: R(true, 0, 0, 1), TTL: []int64{Grace + 1}},
			},
		},
		Scenario{
			Name: "a day-long window",
			Keys: []string{"swl:{d}"},
			Steps: []Step{
				{At: 0, Args: swl(1000, 24*time.Hour, 600), Want: R(true, 400, 0, 86400000), TTL: []int64{86400000}},
				{At: 6 * time.Hour, Args: swl(1000, 24*time.Hour, 400), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
				// 401 must leave: all of them are of 0 h, out at 24 h; the newest (6 h) leaves at 30 h.
				{At: 12 * time.Hour, Args: swl(1000, 24*time.Hour, 401), Want: R(false, 0, 43200000, 64800000), TTL: []int64{64800000}},
				{At: 24*time.Hour - ms, Args: swl(1000, 24*time.Hour, 600), Want: R(false, 0, 1, 21600001), TTL: []int64{21600001}},
				{At: 24 * time.Hour, Args: swl(1000, 24*time.Hour, 600), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
				// 400 must leave: the 400 of 6 h, at 30 h.
				{At: 24 * time.Hour, Args: swl(1000, 24*time.Hour, 400), Want: R(false, 0, 21600000, 86400000), TTL: []int64{86400000}},
				// 601 must leave: the 400 of 6 h and 201 of 24 h, at 48 h.
				{At: 24 * time.Hour, Args: swl(1000, 24*time.Hour, 601), Want: R(false, 0, 86400000, 86400000), TTL: []int64{86400000}},
			},
		},
		Scenario{
			Name:        "out-of-order caller clocks are judged at the newest member",
			Keys:        []string{"swl:{e}"},
			CallerClock: true,
			Steps: []Step{
				{At: 10 * sec, Args: swl(2, sec, 1), Want: R(true, 1, 0, 1000), TTL: []int64{Grace + 1000}},
				// Judged and logged at 10 s, as a second member of the same µs;
				// its reset counts from its own clock: 11 s - 9 s.
				{At: 9 * sec, Args: swl(2, sec, 1), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 1000}},
				{At: 9500 * ms, Args: swl(2, sec, 1), Want: R(false, 0, 1500, 1500), TTL: []int64{Grace + 1000}},
				{At: 10999 * ms, Args: swl(2, sec, 1), Want: R(false, 0, 1, 1), TTL: []int64{Grace + 1}},
				{At: 11 * sec, Args: swl(2, sec, 2), Want: R(true, 0, 0, 1000), TTL: []int64{Grace + 1000}},
				// A late peek sees the log of 11 s; a member leaves at 12 s, 7 s
				// after its own clock.
				{At: 5 * sec, Args: swl(2, sec, 0), Want: R(false, 0, 7000, 7000), TTL: []int64{Grace + 1000}},
			},
		},
		Scenario{
			Name:    "bad input is an error and leaves the key alone",
			Keys:    []string{"swl:{f}"},
			Strings: map[string]string{"swl:{wrong}": "x"},
			Steps: []Step{
				{At: 0, Args: swl(5, sec, 1), Want: R(true, 4, 0, 1000), TTL: []int64{1000}},
				{Args: Args(5, 1000), Err: "BADARG deadline must be an integer from 0 to 4503599627370496, got nothing"},
				{Args: Args("abc", 1000, 1), Err: "BADARG limit must be an integer from 1 to 10000, got 'abc'"},
				{Args: Args("", 1000, 1), Err: "BADARG limit must be an integer from 1 to 10000, got ''"},
				{Args: Args("nan", 1000, 1), Err: "BADARG limit"},
				{Args: Args("inf", 1000, 1), Err: "BADARG limit"},
				{Args: Args("-inf", 1000, 1), Err: "BADARG limit"},
				{Args: Args(0, 1000, 1), Err: "BADARG limit"},
				{Args: Args(-5, 1000, 1), Err: "BADARG limit"},
				{Args: Args(1.5, 1000, 1), Err: "BADARG limit"},
				// Memory and work grow with limit: above 10000, sliding_window_counter.
				{Args: Args(10001, 1000, 1), Err: "BADARG limit must be an integer from 1 to 10000, got '10001'"},
				{Args: Args(5, 0, 1), Err: "BADARG window must be an integer from 1 to 100000000000, got '0'"},
				{Args: Args(5, -1000, 1), Err: "BADARG window"},
				{Args: Args(5, "0.5", 1), Err: "BADARG window"},
				{Args: Args(5, "1e12", 1), Err: "BADARG window"},
				{Args: Args(5, "inf", 1), Err: "BADARG window"},
				{Args: Args(5, 1000, -1), Err: "BADARG cost"},
				{Args: Args(5, 1000, 0.5), Err: "BADARG cost"},
				{Args: Args(5, 1000, "1e10"), Err: "BADARG cost"},
				{Args: Args(5, 1000, "nan"), Err: "BADARG cost"},
				{Args: swl(5, sec, 1), Now: "-1", Err: "BADARG now"},
				{Args: swl(5, sec, 1), Now: "1.5", Err: "BADARG now"},
				{Args: swl(5, sec, 1), Now: "1e300", Err: "BADARG now"},
				{Args: swl(5, sec, 1), Now: "4503599627370497", Err: "BADARG now"}, // 2^52 + 1
				{Args: swl(5, sec, 1), Now: "x", Err: "BADARG now"},
				// No derived bound: now + window <= 2^52 + 1e14 µs < 2^53.
				{At: 500 * ms, Args: swl(5, sec, 1), Want: R(true, 3, 0, 1000), TTL: []int64{1000}},
			},
		},
		Scenario{
			Name:    "a key of another type is an error, never overwritten",
			Keys:    []string{"swl:{wrong}"},
			Strings: map[string]string{"swl:{wrong}": "x"},
			Steps: []Step{
				{At: 0, Args: swl(5, sec, 1), Err: "WRONGTYPE", TTL: []int64{-1}},
			},
		},
	)
}
