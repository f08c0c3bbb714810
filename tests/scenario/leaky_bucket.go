package scenario

import (
	"fmt"
	"time"
)

func init() {
	// lb is ARGV for leaky_bucket without the clock.
	lb := func(capacity, rate int, period time.Duration, cost int) []string {
		return Args(capacity, rate, period, cost)
	}
	sec := time.Second
	us := time.Microsecond
	register(Spec{Script: "leaky_bucket", CostArg: 3},
		Scenario{
			Name: "burst, deny, drain at exact instants",
			Keys: []string{"lb:{a}"},
			// A unit is 1 s of water; the bucket holds 3 s.
			Steps: []Step{
				{At: 0, Args: lb(3, 1, sec, 1), Want: R(true, 2, 0, 1000), TTL: []int64{1000}},
				{At: 0, Args: lb(3, 1, sec, 1), Want: R(true, 1, 0, 2000), TTL: []int64{2000}},
				{At: 0, Args: lb(3, 1, sec, 1), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				{At: 0, Args: lb(3, 1, sec, 1), Want: R(false, 0, 1000, 3000), TTL: []int64{3000}},
				// 2.001 s of water: 1 µs too much for one more unit, rounded up to 1 ms.
				{At: 999 * ms, Args: lb(3, 1, sec, 1), Want: R(false, 0, 1, 2001), TTL: []int64{2001}},
				// Exactly full after this one.
				{At: 1000 * ms, Args: lb(3, 1, sec, 1), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				// A peek answers for a cost of 1 and is idempotent: 2.5 s of water.
				{At: 1500 * ms, Args: lb(3, 1, sec, 0), Want: R(false, 0, 500, 2500), TTL: []int64{2500}},
				{At: 1500 * ms, Args: lb(3, 1, sec, 0), Want: R(false, 0, 500, 2500), TTL: []int64{2500}},
				// 0.5 s of water left: two units fit, the half unit stays.
				{At: 3500 * ms, Args: lb(3, 1, sec, 2), Want: R(true, 0, 0, 2500), TTL: []int64{2500}},
				{At: 4000 * ms, Args: lb(3, 1, sec, 1), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				{At: 10 * sec, Args: lb(3, 1, sec, 3), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				// A cost above capacity can never pass: -1, not a fake wait.
				{At: 10 * sec, Args: lb(3, 1, sec, 4), Want: R(false, 0, -1, 3000), TTL: []int64{3000}},
				// Empty and expired: a peek creates nothing.
				{At: 20 * sec, Args: lb(3, 1, sec, 0), Want: R(true, 3, 0, 0), TTL: []int64{NoKey}},
				{At: 20 * sec, Args: lb(3, 1, sec, 4), Want: R(false, 3, -1, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name:        "sub-second periods and a unit that is not a whole µs",
			Keys:        []string{"lb:{c}"},
			CallerClock: true,
			Steps: []Step{
				{At: 0, Args: lb(2, 1, 100*ms, 2), Want: R(true, 0, 0, 200), TTL: []int64{Grace + 200}},
				{At: 50 * ms, Args: lb(2, 1, 100*ms, 1), Want: R(false, 0, 50, 150), TTL: []int64{Grace + 150}},
				{At: 100 * ms, Args: lb(2, 1, 100*ms, 1), Want: R(true, 0, 0, 200), TTL: []int64{Grace + 200}},
				// 3 units per ms: 333.33 µs each, rounded up to 334; the bucket holds 1002 µs.
				{At: sec, Args: lb(3, 3, ms, 3), Want: R(true, 0, 0, 2), TTL: []int64{Grace + 2}},
				{At: sec + 334*us, Args: lb(3, 3, ms, 1), Want: R(true, 0, 0, 2), TTL: []int64{Grace + 2}},
				// 836 µs of water: 168 µs too much, rounded up to 1 ms. (A PTTL
				// half a ms after a write rounds differently on each server:
				// not compared.)
				{At: sec + 500*us, Args: lb(3, 3, ms, 1), Want: R(false, 0, 1, 1)},
				{At: sec + 668*us, Args: lb(3, 3, ms, 1), Want: R(true, 0, 0, 2), TTL: []int64{Grace + 2}},
				// 1 µs of water: two whole units fit, not three.
				{At: sec + 1669*us, Args: lb(3, 3, ms, 0), Want: R(true, 2, 0, 1)},
				// Exactly empty; the key lives on until its TTL.
				{At: sec + 1670*us, Args: lb(3, 3, ms, 0), Want: R(true, 3, 0, 0)},
				{At: sec + 1670*us, Args: lb(3, 3, ms, 3), Want: R(true, 0, 0, 2), TTL: []int64{Grace + 2}},
			},
		},
		Scenario{
			Name: "a day-long period",
			Keys: []string{"lb:{d}"},
			// A unit is 86.4 s of water.
			Steps: []Step{
				{At: 0, Args: lb(1000, 1000, 24*time.Hour, 1000), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
				{At: 86399 * ms, Args: lb(1000, 1000, 24*time.Hour, 1), Want: R(false, 0, 1, 86313601), TTL: []int64{86313601}},
				{At: 86400 * ms, Args: lb(1000, 1000, 24*time.Hour, 1), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
				// 43286.4 s of water: 499 units fit exactly, 500 after one more unit drains.
				{At: 12 * time.Hour, Args: lb(1000, 1000, 24*time.Hour, 500), Want: R(false, 499, 86400, 43286400), TTL: []int64{43286400}},
				{At: 12 * time.Hour, Args: lb(1000, 1000, 24*time.Hour, 499), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
			},
		},
		Scenario{
			Name: "the largest bucket allowed",
			Keys: []string{"lb:{g}"},
			// 1e6 units of 1e9 µs: 1e15 µs, the derived bound.
			Steps: []Step{
				{At: 0, Args: lb(1000000, 1, 1000*sec, 1000000), Want: R(true, 0, 0, 1000000000000), TTL: []int64{1000000000000}},
				{At: ms, Args: lb(1000000, 1, 1000*sec, 1), Want: R(false, 0, 999999, 999999999999), TTL: []int64{999999999999}},
				{At: ms, Args: lb(1000000, 1, 1000*sec, 0), Want: R(false, 0, 999999, 999999999999), TTL: []int64{999999999999}},
			},
		},
		Scenario{
			Name:        "out-of-order caller clocks never drain the same time twice",
			Keys:        []string{"lb:{e}"},
			CallerClock: true,
			Steps: []Step{
				{At: 10 * sec, Args: lb(2, 1, sec, 2), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				// A late call is judged at 10 s, the stored time, but its waits
				// count from its own clock: room comes at 11 s, 2 s after 9 s.
				{At: 9 * sec, Args: lb(2, 1, sec, 1), Want: R(false, 0, 2000, 3000), TTL: []int64{Grace + 2000}},
				{At: 11 * sec, Args: lb(2, 1, sec, 1), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				// The late call sees the bucket of 11 s, not a second drain.
				{At: 10500 * ms, Args: lb(2, 1, sec, 1), Want: R(false, 0, 1500, 2500), TTL: []int64{Grace + 2000}},
				{At: 12 * sec, Args: lb(2, 1, sec, 1), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				{At: 5 * sec, Args: lb(2, 1, sec, 0), Want: R(false, 0, 8000, 9000), TTL: []int64{Grace + 2000}},
				// A new rate, 2 per 1 s, and capacity 4, from the last pour: the
				// 2 units poured by 12 s are 1 s of water at 0.5 s a unit, 0.5 s
				// at 12.5 s, so 3 units fit and one is poured (1 s).
				// The late call after it is judged at 12.5 s, not 12.2 s: 1.5 s
				// of water, empty at 14 s, 1.8 s after its own clock.
				{At: 12500 * ms, Args: lb(4, 2, sec, 1), Want: R(true, 2, 0, 1000), TTL: []int64{Grace + 1000}},
				{At: 12200 * ms, Args: lb(4, 2, sec, 1), Want: R(true, 1, 0, 1800), TTL: []int64{Grace + 1500}},
			},
		},
		Scenario{
			Name:    "bad input is an error and leaves the key alone",
			Keys:    []string{"lb:{f}"},
			Strings: map[string]string{"lb:{wrong}": "x"},
			Steps: []Step{
				{At: 0, Args: lb(5, 1, sec, 1), Want: R(true, 4, 0, 1000), TTL: []int64{1000}},
				{Args: Args(5, 1, 1000), Err: "BADARG deadline must be an integer from 0 to 4503599627370496, got nothing"},
				{Args: Args("abc", 1, 1000, 1), Err: "BADARG capacity must be an integer from 1 to 1000000000, got 'abc'"},
				{Args: Args("nan", 1, 1000, 1), Err: "BADARG capacity"},
				{Args: Args("inf", 1, 1000, 1), Err: "BADARG capacity"},
				{Args: Args("-inf", 1, 1000, 1), Err: "BADARG capacity"},
				{Args: Args(0, 1, 1000, 1), Err: "BADARG capacity"},
				{Args: Args(-5, 1, 1000, 1), Err: "BADARG capacity"},
				{Args: Args(1.5, 1, 1000, 1), Err: "BADARG capacity"},
				{Args: Args("1e10", 1, 1000, 1), Err: "BADARG capacity"},
				{Args: Args(5, 0, 1000, 1), Err: "BADARG rate must be an integer from 1 to 1000000000, got '0'"},
				{Args: Args(5, "x", 1000, 1), Err: "BADARG rate"},
				{Args: Args(5, 2.5, 1000, 1), Err: "BADARG rate"},
				{Args: Args(5, 1, 0, 1), Err: "BADARG period must be an integer from 1 to 100000000000, got '0'"},
				{Args: Args(5, 1, "0.5", 1), Err: "BADARG period"},
				// A µs is the finest drain time: 1001 per ms is too fast.
				{Args: Args(5, 1001, 1, 1), Err: "BADARG rate must be at most one per µs (period*1000)"},
				{Args: Args(5, 1, "1e12", 1), Err: "BADARG period"},
				{Args: Args(5, 1, -1000, 1), Err: "BADARG period"},
				{Args: Args(5, 1, 1000, -1), Err: "BADARG cost"},
				{Args: Args(5, 1, 1000, 0.5), Err: "BADARG cost"},
				{Args: Args(5, 1, 1000, "1e10"), Err: "BADARG cost"},
				{Args: Args(5, 1, 1000, ""), Err: "BADARG cost must be an integer from 0 to 1000000000, got ''"},
				{Args: lb(5, 1, sec, 1), Now: "-1", Err: "BADARG now"},
				{Args: lb(5, 1, sec, 1), Now: "1.5", Err: "BADARG now"},
				{Args: lb(5, 1, sec, 1), Now: "1e300", Err: "BADARG now"},
				{Args: lb(5, 1, sec, 1), Now: "x", Err: "BADARG now"},
				// Each value is in range, but a full bucket drains for longer
				// than 1e15 µs: 1000001 units of 1e9 µs.
				{Args: Args(1000001, 1, 1000000, 1), Err: "BADARG capacity*period/rate must be at most 1e15 µs (31 years)"},
				{Args: Args(1000000000, 1, 100000000000, 1), Err: "BADARG capacity*period/rate"},
				// 0.5 s drained: 0.5 s of water before this unit.
				{At: 500 * ms, Args: lb(5, 1, sec, 1), Want: R(true, 3, 0, 1500), TTL: []int64{1500}},
			},
		},
		Scenario{
			// The hash that earlier versions of the script wrote: the state
			// is one string now, and the old one is refused, not misread.
			Name: "a key of another type is an error, never overwritten",
			Keys: []string{"lb:{hash}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "lb:{hash}", Type: "hash", Vals: []string{"level", "200000", "ts", fmt.Sprint(t0), "unit", "200000"}}}
			},
			Steps: []Step{
				{At: 0, Args: lb(5, 1, sec, 1), Err: "WRONGTYPE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name:    "a string that holds no state is an error, never overwritten",
			Keys:    []string{"lb:{x}"},
			Strings: map[string]string{"lb:{x}": "x"},
			Steps: []Step{
				{At: 0, Args: lb(5, 1, sec, 1), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
	)
}
