package scenario

import (
	"fmt"
	"time"
)

const ms = time.Millisecond

func init() {
	// tb is ARGV for token_bucket without the clock.
	tb := func(capacity, rate int, period time.Duration, refill string, cost int) []string {
		return Args(capacity, rate, period, refill, cost)
	}
	sec := time.Second
	register(Spec{Script: "token_bucket"},
		Scenario{
			Name: "smooth burst, deny, refill at exact instants",
			Keys: []string{"tb:{a}"},
			Steps: []Step{
				{At: 0, Args: tb(3, 1, sec, "smooth", 1), Want: R(true, 2, 0, 1000), TTL: []int64{1000}},
				{At: 0, Args: tb(3, 1, sec, "smooth", 1), Want: R(true, 1, 0, 2000), TTL: []int64{2000}},
				{At: 0, Args: tb(3, 1, sec, "smooth", 1), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				{At: 0, Args: tb(3, 1, sec, "smooth", 1), Want: R(false, 0, 1000, 3000), TTL: []int64{3000}},
				{At: 999 * ms, Args: tb(3, 1, sec, "smooth", 1), Want: R(false, 0, 1, 2001), TTL: []int64{2001}},
				{At: 1000 * ms, Args: tb(3, 1, sec, "smooth", 1), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				// A peek answers for a cost of 1 and is idempotent.
				{At: 1500 * ms, Args: tb(3, 1, sec, "smooth", 0), Want: R(false, 0, 500, 2500), TTL: []int64{2500}},
				{At: 1500 * ms, Args: tb(3, 1, sec, "smooth", 0), Want: R(false, 0, 500, 2500), TTL: []int64{2500}},
				// 2.5 s after the last credit: two whole tokens, the half carries over.
				{At: 3500 * ms, Args: tb(3, 1, sec, "smooth", 2), Want: R(true, 0, 0, 2500), TTL: []int64{2500}},
				{At: 4000 * ms, Args: tb(3, 1, sec, "smooth", 1), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				{At: 10 * sec, Args: tb(3, 1, sec, "smooth", 3), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				// Expired: the bucket is full again and a peek creates nothing.
				{At: 20 * sec, Args: tb(3, 1, sec, "smooth", 0), Want: R(true, 3, 0, 0), TTL: []int64{NoKey}},
				// A cost above capacity can never pass: -1, not a fake wait.
				{At: 20 * sec, Args: tb(3, 1, sec, "smooth", 4), Want: R(false, 3, -1, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name: "interval refill adds rate tokens per whole period",
			Keys: []string{"tb:{b}"},
			Steps: []Step{
				{At: 0, Args: tb(10, 5, sec, "interval", 10), Want: R(true, 0, 0, 2000), TTL: []int64{2000}},
				{At: 999 * ms, Args: tb(10, 5, sec, "interval", 1), Want: R(false, 0, 1, 1001), TTL: []int64{1001}},
				{At: 1000 * ms, Args: tb(10, 5, sec, "interval", 1), Want: R(true, 4, 0, 2000), TTL: []int64{2000}},
				{At: 1999 * ms, Args: tb(10, 5, sec, "interval", 5), Want: R(false, 4, 1, 1001), TTL: []int64{1001}},
				// 1.5 periods later: one step of 5, the grid stays on whole periods.
				{At: 2500 * ms, Args: tb(10, 5, sec, "interval", 5), Want: R(true, 4, 0, 1500), TTL: []int64{1500}},
				{At: 3000 * ms, Args: tb(10, 5, sec, "interval", 6), Want: R(true, 3, 0, 2000), TTL: []int64{2000}},
				{At: 3000 * ms, Args: tb(10, 5, sec, "interval", 10), Want: R(false, 3, 2000, 2000), TTL: []int64{2000}},
				{At: 5000 * ms, Args: tb(10, 5, sec, "interval", 0), Want: R(true, 10, 0, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name:        "sub-second periods never give a zero TTL",
			Keys:        []string{"tb:{c}"},
			CallerClock: true,
			Steps: []Step{
				{At: 0, Args: tb(2, 1, 100*ms, "smooth", 2), Want: R(true, 0, 0, 200), TTL: []int64{Grace + 200}},
				{At: 50 * ms, Args: tb(2, 1, 100*ms, "smooth", 1), Want: R(false, 0, 50, 150), TTL: []int64{Grace + 150}},
				{At: 100 * ms, Args: tb(2, 1, 100*ms, "smooth", 1), Want: R(true, 0, 0, 200), TTL: []int64{Grace + 200}},
				// 3 tokens per ms: a token every 333.33 µs, rounded up to 334.
				{At: time.Second, Args: tb(3, 3, ms, "smooth", 3), Want: R(true, 0, 0, 1), TTL: []int64{Grace + 1}},
				{At: time.Second + 334*time.Microsecond, Args: tb(3, 3, ms, "smooth", 1), Want: R(true, 0, 0, 1), TTL: []int64{Grace + 1}},
				// Sub-ms PTTLs round differently from server to server: not compared.
				{At: time.Second + 500*time.Microsecond, Args: tb(3, 3, ms, "smooth", 1), Want: R(false, 0, 1, 1)},
				{At: time.Second + 668*time.Microsecond, Args: tb(3, 3, ms, "smooth", 1), Want: R(true, 0, 0, 1), TTL: []int64{Grace + 1}},
			},
		},
		Scenario{
			Name: "a day-long period",
			Keys: []string{"tb:{d}"},
			Steps: []Step{
				{At: 0, Args: tb(1000, 1000, 24*time.Hour, "smooth", 1000), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
				// One token every 86.4 s.
				{At: 86399 * ms, Args: tb(1000, 1000, 24*time.Hour, "smooth", 1), Want: R(false, 0, 1, 86313601), TTL: []int64{86313601}},
				{At: 86400 * ms, Args: tb(1000, 1000, 24*time.Hour, "smooth", 1), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
				{At: 12 * time.Hour, Args: tb(1000, 1000, 24*time.Hour, "smooth", 500), Want: R(false, 499, 86400, 43286400), TTL: []int64{43286400}},
				{At: 12 * time.Hour, Args: tb(1000, 1000, 24*time.Hour, "smooth", 499), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
			},
		},
		Scenario{
			Name:        "out-of-order caller clocks never move the bucket back",
			Keys:        []string{"tb:{e}"},
			CallerClock: true,
			Steps: []Step{
				{At: 10 * sec, Args: tb(2, 1, sec, "smooth", 2), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				// A late call is judged at 10 s, the stored time, but its waits
				// count from its own clock: the token comes at 11 s, 2 s after 9 s.
				{At: 9 * sec, Args: tb(2, 1, sec, "smooth", 1), Want: R(false, 0, 2000, 3000), TTL: []int64{Grace + 2000}},
				{At: 11 * sec, Args: tb(2, 1, sec, "smooth", 1), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				// The late call sees the state of 11 s, not a second credit; the
				// next token comes at 12 s.
				{At: 10500 * ms, Args: tb(2, 1, sec, "smooth", 1), Want: R(false, 0, 1500, 2500), TTL: []int64{Grace + 2000}},
				{At: 12 * sec, Args: tb(2, 1, sec, "smooth", 1), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				// 7 s late (within the 60 s bound), with the other refill style.
				{At: 5 * sec, Args: tb(2, 1, sec, "interval", 1), Want: R(false, 0, 8000, 9000), TTL: []int64{Grace + 2000}},
			},
		},
		Scenario{
			Name:    "bad input is an error and leaves the key alone",
			Keys:    []string{"tb:{f}"},
			Strings: map[string]string{"tb:{wrong}": "x"},
			Steps: []Step{
				{At: 0, Args: tb(5, 1, sec, "smooth", 1), Want: R(true, 4, 0, 1000), TTL: []int64{1000}},
				{Args: Args(5, 1, 1000, "smooth"), Err: "BADARG takes 1 key and 5 arguments, then 1 to 64 requests of 2 (cost, deadline), got 1 and 6"},
				// The layout of earlier versions (refill, cost, now, deadline):
				// refused, never misread.
				{Raw: Args(5, 1, 1000, "smooth", 1, 0, 0), Err: "BADARG now must be an integer from 0 to 4503599627370496, got 'smooth'"},
				{Raw: Args(5, 1, 1000, "interval", 0, 0, 0), Err: "BADARG now must be an integer from 0 to 4503599627370496, got 'interval'"},
				{Args: Args("abc", 1, 1000, "smooth", 1), Err: "BADARG capacity must be an integer from 1 to 1000000000, got 'abc'"},
				{Args: Args("nan", 1, 1000, "smooth", 1), Err: "BADARG capacity"},
				{Args: Args("inf", 1, 1000, "smooth", 1), Err: "BADARG capacity"},
				{Args: Args("-inf", 1, 1000, "smooth", 1), Err: "BADARG capacity"},
				{Args: Args(0, 1, 1000, "smooth", 1), Err: "BADARG capacity"},
				{Args: Args(-5, 1, 1000, "smooth", 1), Err: "BADARG capacity"},
				{Args: Args(1.5, 1, 1000, "smooth", 1), Err: "BADARG capacity"},
				{Args: Args("1e10", 1, 1000, "smooth", 1), Err: "BADARG capacity"},
				{Args: Args(5, 0, 1000, "smooth", 1), Err: "BADARG rate"},
				{Args: Args(5, 1, 0, "smooth", 1), Err: "BADARG period must be an integer from 1 to 100000000000, got '0'"},
				{Args: Args(5, 1, "0.5", "smooth", 1), Err: "BADARG period"},
				{Args: Args(5, 1, 1000, "fast", 1), Err: "BADARG refill must be 'smooth', 'interval', 'smooth_refund', 'smooth_charge', 'interval_refund' or 'interval_charge'"},
				{Args: Args(5, 1, 1000, "smooth", -1), Err: "BADARG cost"},
				{Args: Args(5, 1, 1000, "smooth", 0.5), Err: "BADARG cost"},
				{Args: tb(5, 1, sec, "smooth", 1), Now: "-1", Err: "BADARG now"},
				{Args: tb(5, 1, sec, "smooth", 1), Now: "1.5", Err: "BADARG now"},
				{Args: tb(5, 1, sec, "smooth", 1), Now: "1e300", Err: "BADARG now"},
				{Args: tb(5, 1, sec, "smooth", 1), Now: "x", Err: "BADARG now"},
				// Each value is in range, but the fill time is not.
				{Args: Args(1000000000, 1, 100000000000, "smooth", 1), Err: "BADARG capacity/rate*period"},
				{At: 500 * ms, Args: tb(5, 1, sec, "smooth", 1), Want: R(true, 3, 0, 1500), TTL: []int64{1500}},
			},
		},
		Scenario{
			// The hash that earlier versions of the script wrote: the state
			// is one string now, and the old one is refused, not misread.
			Name: "a key of another type is an error, never overwritten",
			Keys: []string{"tb:{hash}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "tb:{hash}", Type: "hash", Vals: []string{"tokens", "5", "ts", fmt.Sprint(t0)}}}
			},
			Steps: []Step{
				{At: 0, Args: tb(5, 1, sec, "smooth", 1), Err: "WRONGTYPE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name:    "a string that holds no state is an error, never overwritten",
			Keys:    []string{"tb:{x}"},
			Strings: map[string]string{"tb:{x}": "x"},
			Steps: []Step{
				{At: 0, Args: tb(5, 1, sec, "smooth", 1), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
	)
}
