package scenario

import "time"

// multi's steps: Args are cost, then burst, rate and period of each limit
// (the clock and the deadline go between them, at ARGV[2] and ARGV[3]); a reply is allowed, the limit
// that binds a denial, then remaining, retry after and reset after of each
// limit (M).
func init() {
	sec, ms := time.Second, time.Millisecond
	// m is ARGV for multi without the clock: the cost, then each limit as
	// {burst, rate, period}.
	type lim struct {
		burst, rate int
		period      time.Duration
	}
	m := func(cost int, ls ...lim) []string {
		vals := []any{cost}
		for _, l := range ls {
			vals = append(vals, l.burst, l.rate, l.period)
		}
		return Args(vals...)
	}
	perSec := lim{2, 1, sec}         // T = 1 s, 2 at once
	perMin := lim{3, 3, time.Minute} // T = 20 s, 3 at once
	register(Spec{Script: "multi", CostArg: 0, NowArg: 1},
		Scenario{
			Name: "all or nothing: a denial anywhere counts nowhere",
			Keys: []string{"ms:{a}", "mm:{a}"},
			Steps: []Step{
				{At: 0, Args: m(1, perSec, perMin), Want: M(true, 0, 1, 0, 1000, 2, 0, 20000), TTL: []int64{1000, 20000}},
				{At: 0, Args: m(1, perSec, perMin), Want: M(true, 0, 0, 0, 2000, 1, 0, 40000), TTL: []int64{2000, 40000}},
				// The second-limit has room, the first does not: denied by
				// limit 1, and the minute's room is not spent.
				{At: 0, Args: m(1, perSec, perMin), Want: M(false, 1, 0, 1000, 2000, 1, 0, 40000), TTL: []int64{2000, 40000}},
				{At: sec, Args: m(1, perSec, perMin), Want: M(true, 0, 0, 0, 2000, 0, 0, 59000), TTL: []int64{2000, 59000}},
				// Now the minute denies (18 s) and the second has room for one:
				// neither key moves, so a peek says the same.
				{At: 2 * sec, Args: m(1, perSec, perMin), Want: M(false, 2, 1, 0, 1000, 0, 18000, 58000), TTL: []int64{1000, 58000}},
				{At: 2 * sec, Args: m(0, perSec, perMin), Want: M(false, 2, 1, 0, 1000, 0, 18000, 58000), TTL: []int64{1000, 58000}},
				// The second's key expired at 3 s: it starts full.
				{At: 20 * sec, Args: m(1, perSec, perMin), Want: M(true, 0, 1, 0, 1000, 0, 0, 60000), TTL: []int64{1000, 60000}},
				// A cost above a burst can never pass: -1 binds before any wait.
				{At: 20 * sec, Args: m(3, perSec, perMin), Want: M(false, 1, 1, -1, 1000, 0, 60000, 60000), TTL: []int64{1000, 60000}},
			},
		},
		Scenario{
			Name: "the longest wait binds, the first of equals, never first",
			Keys: []string{"m1:{b}", "m2:{b}", "m3:{b}"},
			Steps: []Step{
				{At: 0, Args: m(1, lim{1, 1, sec}, lim{1, 1, sec}, lim{1, 1, 2 * sec}), Want: M(true, 0, 0, 0, 1000, 0, 0, 1000, 0, 0, 2000), TTL: []int64{1000, 1000, 2000}},
				{At: 0, Args: m(1, lim{1, 1, sec}, lim{1, 1, sec}, lim{1, 1, 2 * sec}), Want: M(false, 3, 0, 1000, 1000, 0, 1000, 1000, 0, 2000, 2000), TTL: []int64{1000, 1000, 2000}},
				// At 1 s the first two keys are gone; the third waits 1 s more.
				{At: sec, Args: m(1, lim{1, 1, sec}, lim{1, 1, sec}, lim{1, 1, 2 * sec}), Want: M(false, 3, 1, 0, 0, 1, 0, 0, 0, 1000, 1000), TTL: []int64{NoKey, NoKey, 1000}},
				{At: sec, Args: m(1, lim{1, 1, sec}, lim{1, 2, 2 * sec}, lim{1, 1, 2 * sec}), Want: M(false, 3, 1, 0, 0, 1, 0, 0, 0, 1000, 1000), TTL: []int64{NoKey, NoKey, 1000}},
				// The third at 1 per s: its 2 s lead is one 2 s interval, a full
				// burst of 1 s from its last write at 0, so it has room at 1 s.
				{At: sec, Args: m(0, lim{1, 1, sec}, lim{1, 1, sec}, lim{1, 1, sec}), Want: M(true, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0), TTL: []int64{NoKey, NoKey, 1000}},
				// Every limit refuses a cost of 2 for good: the first binds.
				{At: sec, Args: m(2, lim{1, 1, sec}, lim{1, 1, sec}, lim{1, 1, sec}), Want: M(false, 1, 1, -1, 0, 1, -1, 0, 1, -1, 0), TTL: []int64{NoKey, NoKey, 1000}},
				{At: sec, Args: m(2, lim{2, 1, sec}, lim{1, 1, sec}, lim{2, 1, sec}), Want: M(false, 2, 2, 0, 0, 1, -1, 0, 2, 0, 0), TTL: []int64{NoKey, NoKey, 1000}},
			},
		},
		Scenario{
			Name:        "caller clocks, late and early",
			Keys:        []string{"ms:{c}", "mt:{c}"},
			CallerClock: true,
			// With a caller clock a write's TTL runs to the TAT by the server's
			// clock, plus Grace.
			Steps: []Step{
				{At: 10 * sec, Args: m(1, perSec, lim{5, 1, 10 * sec}), Want: M(true, 0, 1, 0, 1000, 4, 0, 10000), TTL: []int64{Grace + 1000, Grace + 10000}},
				// Stamped 9 s, the server at 10 s: the first limit's TAT (11 s)
				// is 2 s ahead of it, so one more waits 1 s of its own clock.
				{At: 9 * sec, Args: m(1, perSec, lim{5, 1, 10 * sec}), Want: M(false, 1, 0, 1000, 2000, 3, 0, 11000), TTL: []int64{Grace + 1000, Grace + 10000}},
				{At: 11 * sec, Args: m(1, perSec, lim{5, 1, 10 * sec}), Want: M(true, 0, 1, 0, 1000, 3, 0, 19000), TTL: []int64{Grace + 1000, Grace + 19000}},
			},
		},
		Scenario{
			Name: "limits change while the keys live, as gcra.lua's do",
			Keys: []string{"ma:{limits}", "mb:{limits}"},
			// The first limit follows gcra's table in limits.go step for step;
			// the second always has room.
			Steps: []Step{
				{Args: m(10, lim{10, 5, sec}, lim{100, 100, sec}), Want: M(true, 0, 0, 0, 2000, 90, 0, 100), TTL: []int64{2000, 100}},
				{At: sec, Args: m(1, lim{10, 1, sec}, lim{100, 100, sec}), Want: M(true, 0, 0, 0, 10000, 99, 0, 10), TTL: []int64{10000, 10}},
				{At: sec, Args: m(1, lim{3, 1, sec}, lim{100, 100, sec}), Want: M(false, 1, 0, 1000, 3000, 99, 0, 10), TTL: []int64{10000, 10}},
				{At: 1500 * ms, Args: m(4, lim{10, 10, sec}, lim{100, 100, sec}), Want: M(true, 0, 1, 0, 900, 96, 0, 40), TTL: []int64{900, 40}},
				{At: 1500 * ms, Args: m(1, lim{10, 10, sec}, lim{100, 100, sec}), Want: M(true, 0, 0, 0, 1000, 95, 0, 50), TTL: []int64{1000, 50}},
			},
		},
		Scenario{
			Name: "a key gcra.lua wrote is the same limit",
			Keys: []string{"rl:gcra:{e}", "rl:day:{e}"},
			// As gcra.lua at 3 per s leaves a key after one call: its TAT is
			// 1 s ahead. (A long TTL, so a real server keeps it for the run.)
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "rl:gcra:{e}", Type: "string", Vals: []string{GCRAState(t0+1000000, 1000000, 1000000)}, TTL: 60000}}
			},
			Steps: []Step{
				{At: 0, Args: m(0, lim{3, 1, sec}, lim{10, 10, 24 * time.Hour}), Want: M(true, 0, 2, 0, 1000, 10, 0, 0), TTL: []int64{60000, NoKey}},
				{At: 0, Args: m(2, lim{3, 1, sec}, lim{10, 10, 24 * time.Hour}), Want: M(true, 0, 0, 0, 3000, 8, 0, 17280000), TTL: []int64{3000, 17280000}},
			},
		},
		Scenario{
			Name: "bad input is an error and changes no key",
			Keys: []string{"ms:{f}", "mm:{f}"},
			Steps: []Step{
				{At: 0, Args: m(1, perSec, perMin), Want: M(true, 0, 1, 0, 1000, 2, 0, 20000), TTL: []int64{1000, 20000}},
				{Args: Args("abc", 2, 1, 1000, 3, 3, 60000), Err: "BADARG cost must be an integer from 0 to 1000000000, got 'abc'", TTL: []int64{1000, 20000}},
				{Args: Args(-1, 2, 1, 1000, 3, 3, 60000), Err: "BADARG cost"},
				{Args: m(1, perSec, perMin), Now: "-1", Err: "BADARG now"},
				{Args: m(1, perSec, perMin), Now: "1e15", Err: "BADARG now"},
				{Args: Args(1, 2, 1, 1000, 0, 3, 60000), Err: "BADARG burst of limit 2 must be an integer from 1 to 1000000000, got '0'"},
				{Args: Args(1, 2, "1e3", 1000, 3, 3, 60000), Err: "BADARG rate of limit 1 must be an integer from 1 to 1000000000, got '1e3'"},
				{Args: Args(1, 2, 1, 1000, 3, 3, "1.5"), Err: "BADARG period of limit 2 must be an integer from 1 to 100000000000, got '1.5'"},
				{Args: Args(1, 2, 1, 1000, 3, 3), Err: "BADARG period of limit 2 must be an integer from 1 to 100000000000, got nothing"},
				{Args: Args(1, 2, 1, 1000, 3, 3, 60000, 1), Err: "BADARG takes 2 key(s) and 9 arguments, got 2 and 10"},
				{Args: Args(1, 2, 1, 1000, 5, 1001, 1), Err: "BADARG rate of limit 2 must be at most one per µs (period*1000)"},
				{Args: Args(1, 1000000000, 1, 1001, 3, 3, 60000), Err: "BADARG burst*period/rate of limit 1 must be at most 1e15 µs (31 years)"},
				{At: 0, Args: m(0, perSec, perMin), Want: M(true, 0, 1, 0, 1000, 2, 0, 20000), TTL: []int64{1000, 20000}},
			},
		},
		Scenario{
			Name: "one key for two limits is refused",
			Keys: []string{"mx:{g}", "mx:{g}"},
			Steps: []Step{
				{At: 0, Args: m(1, perSec, perMin), Err: "BADARG keys 1 and 2 are the same key: each limit needs its own", TTL: []int64{NoKey, NoKey}},
			},
		},
		Scenario{
			Name:    "foreign data at any key is an error, and no key is written",
			Keys:    []string{"mf:{h}", "mw:{h}", "mh:{h}"},
			Strings: map[string]string{"mw:{h}": "x"},
			Steps: []Step{
				{At: 0, Args: m(1, perSec, perSec, perSec), Err: "BADSTATE", TTL: []int64{NoKey, -1, NoKey}},
				{At: 0, Args: m(0, perSec, perSec, perSec), Err: "BADSTATE", TTL: []int64{NoKey, -1, NoKey}},
			},
		},
		Scenario{
			Name: "another type at any key is an error, and no key is written",
			Keys: []string{"mf:{i}", "mh:{i}"},
			Preset: func(int64) []Preset {
				return []Preset{{Key: "mh:{i}", Type: "hash", Vals: []string{"tokens", "1"}}}
			},
			Steps: []Step{
				{At: 0, Args: m(1, perSec, perSec), Err: "WRONGTYPE", TTL: []int64{NoKey, -1}},
			},
		},
	)
}
