package scenario

import (
	"fmt"
	"time"
)

func init() {
	// fw is ARGV for fixed_window without the clock.
	fw := func(limit int, window time.Duration, cost int) []string {
		return Args(limit, window, cost)
	}
	sec, us, day := time.Second, time.Microsecond, 24*time.Hour
	register(fixedWindowSpec,
		Scenario{
			Name: "burst, deny, and a fresh count when the window ends",
			Keys: []string{"fw:{a}"},
			Steps: []Step{
				{At: 0, Args: fw(3, sec, 1), Want: R(true, 2, 0, 1000), TTL: []int64{1000}},
				{At: 0, Args: fw(3, sec, 2), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				{At: 0, Args: fw(3, sec, 1), Want: R(false, 0, 1000, 1000), TTL: []int64{1000}},
				{At: 999 * ms, Args: fw(3, sec, 1), Want: R(false, 0, 1, 1), TTL: []int64{1}},
				// The window has ended: the key is gone, a peek creates nothing
				// and is idempotent.
				{At: sec, Args: fw(3, sec, 0), Want: R(true, 3, 0, 0), TTL: []int64{NoKey}},
				{At: sec, Args: fw(3, sec, 0), Want: R(true, 3, 0, 0), TTL: []int64{NoKey}},
				// Exactly the limit fits; the window runs to 2 s.
				{At: sec, Args: fw(3, sec, 3), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				// A peek on a full window answers for a cost of 1.
				{At: 1500 * ms, Args: fw(3, sec, 0), Want: R(false, 0, 500, 500), TTL: []int64{500}},
				{At: 1500 * ms, Args: fw(3, sec, 0), Want: R(false, 0, 500, 500), TTL: []int64{500}},
				// A cost above the limit can never pass: -1, not a fake wait.
				{At: 1500 * ms, Args: fw(3, sec, 4), Want: R(false, 0, -1, 500), TTL: []int64{500}},
				{At: 2 * sec, Args: fw(3, sec, 4), Want: R(false, 3, -1, 0), TTL: []int64{NoKey}},
				{At: 2 * sec, Args: fw(3, sec, 2), Want: R(true, 1, 0, 1000), TTL: []int64{1000}},
				{At: 2250 * ms, Args: fw(3, sec, 1), Want: R(true, 0, 0, 750), TTL: []int64{750}},
				{At: 2250 * ms, Args: fw(3, sec, 1), Want: R(false, 0, 750, 750), TTL: []int64{750}},
			},
		},
		Scenario{
			Name: "the known burst: 2*limit within 1 ms across a boundary",
			Keys: []string{"fw:{b}"},
			Steps: []Step{
				{At: 999 * ms, Args: fw(5, sec, 5), Want: R(true, 0, 0, 1), TTL: []int64{1}},
				// 1 ms later a new window: another full limit.
				{At: sec, Args: fw(5, sec, 5), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				{At: 1001 * ms, Args: fw(5, sec, 1), Want: R(false, 0, 999, 999), TTL: []int64{999}},
				{At: 1999 * ms, Args: fw(5, sec, 1), Want: R(false, 0, 1, 1), TTL: []int64{1}},
				{At: 2 * sec, Args: fw(5, sec, 1), Want: R(true, 4, 0, 1000), TTL: []int64{1000}},
			},
		},
		Scenario{
			Name:        "sub-second windows never give a zero TTL",
			Keys:        []string{"fw:{c}"},
			CallerClock: true,
			// Steps that write nothing sit a whole number of ms after the last
			// write: servers keep TTLs in whole ms and round PTTL differently.
			// Nothing relies on a key of a 1 ms window outliving the next
			// step, which a real server's own clock may not allow.
			Steps: []Step{
				// 99.7 ms left, rounded up.
				{At: 300 * us, Args: fw(2, 100*ms, 2), Want: R(true, 0, 0, 100), TTL: []int64{Grace + 100}},
				{At: 50300 * us, Args: fw(2, 100*ms, 1), Want: R(false, 0, 50, 50), TTL: []int64{Grace + 50}},
				// 700 µs before the end: the wait rounds up to 1 ms.
				{At: 99300 * us, Args: fw(2, 100*ms, 1), Want: R(false, 0, 1, 1), TTL: []int64{Grace + 1}},
				// A new window while the old key still lives (to 100.3 ms):
				// its count is stale and dropped.
				{At: 100 * ms, Args: fw(2, 100*ms, 1), Want: R(true, 1, 0, 100), TTL: []int64{Grace + 100}},
				// 49.7 ms left, rounded up.
				{At: 150300 * us, Args: fw(2, 100*ms, 1), Want: R(true, 0, 0, 50), TTL: []int64{Grace + 50}},
				// 1 ms windows, 1 µs before the end: the TTL is 1 ms, never 0.
				{At: sec + 999*us, Args: fw(2, ms, 2), Want: R(true, 0, 0, 1), TTL: []int64{Grace + 1}},
				{At: sec + ms, Args: fw(2, ms, 2), Want: R(true, 0, 0, 1), TTL: []int64{Grace + 1}},
			},
		},
		Scenario{
			Name: "a day-long window starts at UTC midnight, not at the first call",
			Keys: []string{"fw:{d}"},
			Steps: []Step{
				// 06:00: the day has 18 h left.
				{At: 6 * time.Hour, Args: fw(1000, day, 999), Want: R(true, 1, 0, 64800000), TTL: []int64{64800000}},
				{At: 12 * time.Hour, Args: fw(1000, day, 2), Want: R(false, 1, 43200000, 43200000), TTL: []int64{43200000}},
				{At: 12 * time.Hour, Args: fw(1000, day, 1), Want: R(true, 0, 0, 43200000), TTL: []int64{43200000}},
				{At: day - ms, Args: fw(1000, day, 1), Want: R(false, 0, 1, 1), TTL: []int64{1}},
				{At: day, Args: fw(1000, day, 1000), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
				{At: 36 * time.Hour, Args: fw(1000, day, 0), Want: R(false, 0, 43200000, 43200000), TTL: []int64{43200000}},
			},
		},
		Scenario{
			Name:        "out-of-order caller clocks count in the stored window",
			Keys:        []string{"fw:{e}"},
			CallerClock: true,
			Steps: []Step{
				{At: 10 * sec, Args: fw(3, sec, 2), Want: R(true, 1, 0, 1000), TTL: []int64{Grace + 1000}},
				// A late call from window 9 counts in window 10; its wait is
				// measured from its own clock: 11 s - 9.5 s. The key lives to
				// the window's end by the server's clock (10 s), plus Grace.
				{At: 9500 * ms, Args: fw(3, sec, 1), Want: R(true, 0, 0, 1500), TTL: []int64{Grace + 1000}},
				{At: 9500 * ms, Args: fw(3, sec, 1), Want: R(false, 0, 1500, 1500), TTL: []int64{Grace + 1000}},
				// The server clock is at 10.5 s; the key expires Grace after 11 s.
				{At: 10500 * ms, Args: fw(3, sec, 1), Want: R(false, 0, 500, 500), TTL: []int64{Grace + 500}},
				// Window 11 while the key of window 10 is still there: the
				// stale count is dropped.
				{At: 11 * sec, Args: fw(3, sec, 1), Want: R(true, 2, 0, 1000), TTL: []int64{Grace + 1000}},
				// Late again: counts in window 11, which ends 1.8 s after 10.2 s.
				{At: 10200 * ms, Args: fw(3, sec, 2), Want: R(true, 0, 0, 1800), TTL: []int64{Grace + 1000}},
				{At: 3 * sec, Args: fw(3, sec, 0), Want: R(false, 0, 9000, 9000), TTL: []int64{Grace + 1000}},
				{At: 12 * sec, Args: fw(3, sec, 3), Want: R(true, 0, 0, 1000), TTL: []int64{Grace + 1000}},
			},
		},
		Scenario{
			Name: "bad input is an error and leaves the key alone",
			Keys: []string{"fw:{f}"},
			Steps: []Step{
				{At: 0, Args: fw(5, sec, 1), Want: R(true, 4, 0, 1000), TTL: []int64{1000}},
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
				{Args: Args(5, "inf", 1), Err: "BADARG window"},
				{Args: Args(5, "100000000001", 1), Err: "BADARG window"},
				{Args: Args(5, 1000, -1), Err: "BADARG cost must be an integer from 0 to 1000000000, got '-1'"},
				{Args: Args(5, 1000, 0.5), Err: "BADARG cost"},
				{Args: Args(5, 1000, "inf"), Err: "BADARG cost"},
				{Args: Args(5, 1000, 1000000001), Err: "BADARG cost"},
				{Args: fw(5, sec, 1), Now: "-1", Err: "BADARG now"},
				{Args: fw(5, sec, 1), Now: "1.5", Err: "BADARG now"},
				{Args: fw(5, sec, 1), Now: "1e300", Err: "BADARG now"},
				{Args: fw(5, sec, 1), Now: "4503599627370497", Err: "BADARG now"},
				{Args: fw(5, sec, 1), Now: "x", Err: "BADARG now"},
				// The first bad argument is the one named.
				{Args: Args("x", 0, -1), Err: "BADARG limit"},
				// No argument needs a bound on a combination: the longest window
				// at the largest clock stays below 2^53 µs.
				{At: 500 * ms, Args: fw(5, sec, 1), Want: R(true, 3, 0, 500), TTL: []int64{500}},
			},
		},
		Scenario{
			// The hash that earlier versions of the script wrote: the state
			// is one string now, and the old one is refused, not misread.
			Name: "a key of another type is an error, never overwritten",
			Keys: []string{"fw:{hash}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "fw:{hash}", Type: "hash", Vals: []string{"n", "1", "t", fmt.Sprint(t0)}}}
			},
			Steps: []Step{
				{At: 0, Args: fw(5, sec, 1), Err: "WRONGTYPE", TTL: []int64{-1}},
				{At: 0, Args: fw(5, sec, 0), Err: "WRONGTYPE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name:    "a string that holds no state is an error, never overwritten",
			Keys:    []string{"fw:{x}"},
			Strings: map[string]string{"fw:{x}": "x"},
			Steps: []Step{
				{At: 0, Args: fw(5, sec, 1), Err: "BADSTATE", TTL: []int64{-1}},
				{At: 0, Args: fw(5, sec, 0), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
	)
}
