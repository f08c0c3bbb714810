package scenario

import (
	"fmt"
	"time"
)

func init() {
	// swc is ARGV for sliding_window_counter without the clock.
	swc := func(limit int, window time.Duration, cost int) []string {
		return Args(limit, window, cost)
	}
	sec, us, hour, day := time.Second, time.Microsecond, time.Hour, 24*time.Hour
	// In the comments, est(t) = cur + ceil(prev * (W - e) / W) with e the
	// time since the window at t began, and a cost fits while est + cost <= limit.
	register(Spec{Script: "sliding_window_counter", CostArg: 2},
		Scenario{
			Name: "burst, deny, and the previous count decaying at exact instants",
			Keys: []string{"swc:{a}"},
			Steps: []Step{
				// The counts weigh until the end of the next window: 2 s.
				{At: 0, Args: swc(4, sec, 1), Want: R(true, 3, 0, 2000), TTL: []int64{2000}},
				{At: 0, Args: swc(4, sec, 3), Want: R(true, 0, 0, 2000), TTL: []int64{2000}},
				// prev=4 must weigh <= 3: 4*(W-e)/W <= 3 from e = W/4, at 1.25 s.
				{At: 0, Args: swc(4, sec, 1), Want: R(false, 0, 1250, 2000), TTL: []int64{2000}},
				// est = ceil(4*0.751) = 4; prev alone weighs until 2 s.
				{At: 1249 * ms, Args: swc(4, sec, 1), Want: R(false, 0, 1, 751), TTL: []int64{751}},
				// est = ceil(4*0.75) = 3: one fits; now cur=1 weighs until 3 s.
				{At: 1250 * ms, Args: swc(4, sec, 1), Want: R(true, 0, 0, 1750), TTL: []int64{1750}},
				// est = 1 + ceil(4*0.5) = 3: a peek fits, twice.
				{At: 1500 * ms, Args: swc(4, sec, 0), Want: R(true, 1, 0, 1500), TTL: []int64{1500}},
				{At: 1500 * ms, Args: swc(4, sec, 0), Want: R(true, 1, 0, 1500), TTL: []int64{1500}},
				// 2 more need ceil(4*(W-e)/W) <= 1: from e = 3W/4, at 1.75 s.
				{At: 1500 * ms, Args: swc(4, sec, 2), Want: R(false, 1, 250, 1500), TTL: []int64{1500}},
				{At: 1750 * ms, Args: swc(4, sec, 2), Want: R(true, 0, 0, 1250), TTL: []int64{1250}},
				// A cost of limit waits until cur=3 weighs 0 too, at 3 s.
				{At: 1750 * ms, Args: swc(4, sec, 4), Want: R(false, 0, 1250, 1250), TTL: []int64{1250}},
				// A cost above the limit can never pass: -1, not a fake wait.
				{At: 1750 * ms, Args: swc(4, sec, 5), Want: R(false, 0, -1, 1250), TTL: []int64{1250}},
				// Window 2: prev=3 weighs 3 at its start.
				{At: 2 * sec, Args: swc(4, sec, 1), Want: R(true, 0, 0, 2000), TTL: []int64{2000}},
				// Both counts weigh 0 from 4 s: the key is gone, a peek creates nothing.
				{At: 5 * sec, Args: swc(4, sec, 0), Want: R(true, 4, 0, 0), TTL: []int64{NoKey}},
				{At: 5 * sec, Args: swc(4, sec, 5), Want: R(false, 4, -1, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name: "the worst case: 2*limit-1 within one window length",
			Keys: []string{"swc:{b}"},
			Steps: []Step{
				{At: 999 * ms, Args: swc(10, sec, 10), Want: R(true, 0, 0, 1001), TTL: []int64{1001}},
				// prev=10 must weigh <= 9: from e = W/10.
				{At: sec, Args: swc(10, sec, 1), Want: R(false, 0, 100, 1000), TTL: []int64{1000}},
				// est = ceil(10*0.001) = 1: nine more, 19 within [0.999 s, 1.999 s].
				{At: 1999 * ms, Args: swc(10, sec, 9), Want: R(true, 0, 0, 1001), TTL: []int64{1001}},
				// Room 0 needs prev to weigh 0: at 2 s, where 9 becomes prev.
				{At: 1999 * ms, Args: swc(10, sec, 1), Want: R(false, 0, 1, 1001), TTL: []int64{1001}},
				{At: 2 * sec, Args: swc(10, sec, 1), Want: R(true, 0, 0, 2000), TTL: []int64{2000}},
			},
		},
		Scenario{
			Name:        "sub-second windows never give a zero TTL",
			Keys:        []string{"swc:{c}"},
			CallerClock: true,
			// Steps that write nothing sit a whole number of ms after the last
			// write: servers keep TTLs in whole ms and round PTTL differently.
			// Nothing relies on a key of a 1 ms window outliving the next
			// step, which a real server's own clock may not allow.
			Steps: []Step{
				// The counts weigh until 200 ms: 199.667 ms, rounded up.
				{At: 333 * us, Args: swc(3, 100*ms, 3), Want: R(true, 0, 0, 200), TTL: []int64{Grace + 200}},
				// prev=3 must weigh <= 2: e >= W - floor(2W/3) = 33334 µs, at
				// 133.334 ms; 83.001 ms rounds up.
				{At: 50333 * us, Args: swc(3, 100*ms, 1), Want: R(false, 0, 84, 150), TTL: []int64{Grace + 150}},
				// 1 µs early: ceil(3*66667/100000) = 3. prev weighs until 200 ms.
				{At: 133333 * us, Args: swc(3, 100*ms, 1), Want: R(false, 0, 1, 67), TTL: []int64{Grace + 67}},
				// ceil(3*66666/100000) = 2; cur=1 weighs until 300 ms.
				{At: 133334 * us, Args: swc(3, 100*ms, 1), Want: R(true, 0, 0, 167), TTL: []int64{Grace + 167}},
				// 1 ms windows: the counts weigh 1.001 ms more, rounded up.
				{At: sec + 999*us, Args: swc(2, ms, 2), Want: R(true, 0, 0, 2), TTL: []int64{Grace + 2}},
			},
		},
		Scenario{
			Name: "day-long windows start at UTC midnight",
			Keys: []string{"swc:{d}"},
			Steps: []Step{
				// The counts weigh until the end of the next day: 42 h after 06:00.
				{At: 6 * hour, Args: swc(1000, day, 1000), Want: R(true, 0, 0, 151200000), TTL: []int64{151200000}},
				// prev=1000 must weigh <= 999: from e = W/1000 = 86.4 s.
				{At: day, Args: swc(1000, day, 1), Want: R(false, 0, 86400, 86400000), TTL: []int64{86400000}},
				// Half a day in, prev weighs 500.
				{At: 36 * hour, Args: swc(1000, day, 500), Want: R(true, 0, 0, 129600000), TTL: []int64{129600000}},
				// One more needs prev to weigh <= 499: from e = 501/1000 day.
				{At: 36 * hour, Args: swc(1000, day, 1), Want: R(false, 0, 86400, 129600000), TTL: []int64{129600000}},
			},
		},
		Scenario{
			Name:        "out-of-order caller clocks are judged at the stored window's start",
			Keys:        []string{"swc:{e}"},
			CallerClock: true,
			Steps: []Step{
				{At: 10 * sec, Args: swc(4, sec, 4), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				// est = ceil(4*0.5) = 2.
				{At: 11500 * ms, Args: swc(4, sec, 2), Want: R(true, 0, 0, 1500), TTL: []int64{Grace + 1500}},
				// Late, from window 10: judged at 11 s, est = 2 + 4; one more
				// fits from 11.75 s, 850 ms after its own clock; the counts
				// weigh until 13 s, 2.1 s after it.
				{At: 10900 * ms, Args: swc(4, sec, 1), Want: R(false, 0, 850, 2100), TTL: []int64{Grace + 1500}},
				{At: 11750 * ms, Args: swc(4, sec, 1), Want: R(true, 0, 0, 1250), TTL: []int64{Grace + 1250}},
				// Late within window 11: judged at its own 11.2 s, where prev
				// weighs more (est = 3 + 4), so it is only ever stricter.
				{At: 11200 * ms, Args: swc(4, sec, 0), Want: R(false, 0, 800, 1800), TTL: []int64{Grace + 1250}},
				{At: 3 * sec, Args: swc(4, sec, 0), Want: R(false, 0, 9000, 10000), TTL: []int64{Grace + 1250}},
				// Window 12: prev=3 weighs ceil(1.5) = 2.
				{At: 12500 * ms, Args: swc(4, sec, 2), Want: R(true, 0, 0, 1500), TTL: []int64{Grace + 1500}},
				// est(12.25 s) = 2 + ceil(3*0.75) = 5; prev must weigh <= 1:
				// from e = W - floor(W/3) = 666667 µs; 416.667 ms rounds up.
				{At: 12250 * ms, Args: swc(4, sec, 1), Want: R(false, 0, 417, 1750), TTL: []int64{Grace + 1500}},
			},
		},
		Scenario{
			Name: "bad input is an error and leaves the key alone",
			Keys: []string{"swc:{f}"},
			Steps: []Step{
				{At: 0, Args: swc(5, sec, 1), Want: R(true, 4, 0, 2000), TTL: []int64{2000}},
				{Args: Args(5, 1000), Err: "BADARG deadline must be an integer from 0 to 4503599627370496, got nothing"},
				{Args: Args("abc", 1000, 1), Err: "BADARG limit must be an integer from 1 to 1000000000, got 'abc'"},
				{Args: Args("nan", 1000, 1), Err: "BADARG limit must be an integer from 1 to 1000000000, got 'nan'"},
				{Args: Args("inf", 1000, 1), Err: "BADARG limit"},
				{Args: Args("-inf", 1000, 1), Err: "BADARG limit"},
				{Args: Args(0, 1000, 1), Err: "BADARG limit"},
				{Args: Args(-5, 1000, 1), Err: "BADARG limit"},
				{Args: Args(1.5, 1000, 1), Err: "BADARG limit"},
				{Args: Args("1e10", 1000, 1), Err: "BADARG limit"},
				{Args: Args(1000000001, 1000, 1), Err: "BADARG limit"},
				{Args: Args(5, 0, 1), Err: "BADARG window must be an integer from 1 to 100000000000, got '0'"},
				{Args: Args(5, -1000, 1), Err: "BADARG window"},
				{Args: Args(5, "0.5", 1), Err: "BADARG window"},
				{Args: Args(5, "nan", 1), Err: "BADARG window"},
				{Args: Args(5, "-inf", 1), Err: "BADARG window"},
				{Args: Args(5, "100000000001", 1), Err: "BADARG window"},
				{Args: Args(5, 1000, -1), Err: "BADARG cost must be an integer from 0 to 1000000000, got '-1'"},
				{Args: Args(5, 1000, 0.5), Err: "BADARG cost"},
				{Args: Args(5, 1000, "nan"), Err: "BADARG cost"},
				{Args: Args(5, 1000, 1000000001), Err: "BADARG cost"},
				{Args: swc(5, sec, 1), Now: "-1", Err: "BADARG now"},
				{Args: swc(5, sec, 1), Now: "1.5", Err: "BADARG now"},
				{Args: swc(5, sec, 1), Now: "1e300", Err: "BADARG now"},
				{Args: swc(5, sec, 1), Now: "4503599627370497", Err: "BADARG now"},
				{Args: swc(5, sec, 1), Now: "inf", Err: "BADARG now"},
				{Args: swc(5, sec, 1), Now: "x", Err: "BADARG now"},
				{Args: Args(5, "x", -1), Err: "BADARG window"},
				// No combination needs a bound: count * window (up to 1e23)
				// is computed exactly without a double product.
				{At: 500 * ms, Args: swc(5, sec, 1), Want: R(true, 3, 0, 1500), TTL: []int64{1500}},
			},
		},
		Scenario{
			// The hash that earlier versions of the script wrote: the state
			// is one string now, and the old one is refused, not misread.
			Name: "a key of another type is an error, never overwritten",
			Keys: []string{"swc:{hash}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "swc:{hash}", Type: "hash", Vals: []string{"s", fmt.Sprint(t0), "t", fmt.Sprint(t0), "cur", "1", "prev", "0"}}}
			},
			Steps: []Step{
				{At: 0, Args: swc(5, sec, 1), Err: "WRONGTYPE", TTL: []int64{-1}},
				{At: 0, Args: swc(5, sec, 0), Err: "WRONGTYPE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name:    "a string that holds no state is an error, never overwritten",
			Keys:    []string{"swc:{x}"},
			Strings: map[string]string{"swc:{x}": "x"},
			Steps: []Step{
				{At: 0, Args: swc(5, sec, 1), Err: "BADSTATE", TTL: []int64{-1}},
				{At: 0, Args: swc(5, sec, 0), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
	)
}
