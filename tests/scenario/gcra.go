package scenario

import "time"

func init() {
	// g is ARGV for gcra without the clock and the deadline: one request
	// that passes whole or not at all.
	g := func(burst, rate int, period time.Duration, cost int) []string {
		return Args(burst, rate, period, "all", cost)
	}
	sec, milli, us := time.Second, time.Millisecond, time.Microsecond
	register(Spec{Script: "gcra"},
		Scenario{
			Name: "burst, deny, one per interval at exact instants",
			Keys: []string{"gcra:{a}"},
			// T = 1 s; a call passes while the TAT, pushed by cost*T, stays
			// within 3 s of now.
			Steps: []Step{
				{At: 0, Args: g(3, 1, sec, 1), Want: R(true, 2, 0, 1000), TTL: []int64{1000}},
				{At: 0, Args: g(3, 1, sec, 1), Want: R(true, 1, 0, 2000), TTL: []int64{2000}},
				{At: 0, Args: g(3, 1, sec, 1), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				{At: 0, Args: g(3, 1, sec, 1), Want: R(false, 0, 1000, 3000), TTL: []int64{3000}},
				// The TAT is 2.001 s ahead: 1 µs too far for one more, rounded up to 1 ms.
				{At: 999 * milli, Args: g(3, 1, sec, 1), Want: R(false, 0, 1, 2001), TTL: []int64{2001}},
				// Exactly 2 s ahead: passes, and the TAT is now 3 s ahead (at 4 s).
				{At: 1000 * milli, Args: g(3, 1, sec, 1), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				// A peek answers for a cost of 1 and is idempotent: 2.5 s ahead.
				{At: 1500 * milli, Args: g(3, 1, sec, 0), Want: R(false, 0, 500, 2500), TTL: []int64{2500}},
				{At: 1500 * milli, Args: g(3, 1, sec, 0), Want: R(false, 0, 500, 2500), TTL: []int64{2500}},
				// 0.5 s ahead: cost 2 needs at most 1 s; the TAT moves to 6 s.
				{At: 3500 * milli, Args: g(3, 1, sec, 2), Want: R(true, 0, 0, 2500), TTL: []int64{2500}},
				{At: 4000 * milli, Args: g(3, 1, sec, 1), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				// The TAT (7 s) is behind now: it counts as now, a full burst passes.
				{At: 10 * sec, Args: g(3, 1, sec, 3), Want: R(true, 0, 0, 3000), TTL: []int64{3000}},
				// Expired at 13 s: a peek creates nothing.
				{At: 20 * sec, Args: g(3, 1, sec, 0), Want: R(true, 3, 0, 0), TTL: []int64{NoKey}},
				// A cost above burst can never pass: -1, not a fake wait.
				{At: 20 * sec, Args: g(3, 1, sec, 4), Want: R(false, 3, -1, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name: "remaining counts whole requests; idle time banks no more than a burst",
			Keys: []string{"gcra:{b}"},
			// T = 100 ms, burst 5: the TAT may run at most 500 ms ahead.
			Steps: []Step{
				{At: 0, Args: g(5, 10, sec, 4), Want: R(true, 1, 0, 400), TTL: []int64{400}},
				// 350 ms ahead, pushed to 450 ms: 50 ms short of room for one more.
				{At: 50 * milli, Args: g(5, 10, sec, 1), Want: R(true, 0, 0, 450), TTL: []int64{450}},
				{At: 50 * milli, Args: g(5, 10, sec, 1), Want: R(false, 0, 50, 450), TTL: []int64{450}},
				{At: 100 * milli, Args: g(5, 10, sec, 1), Want: R(true, 0, 0, 500), TTL: []int64{500}},
				// Above burst, on a busy key: the real remaining and reset, retry -1.
				{At: 100 * milli, Args: g(5, 10, sec, 6), Want: R(false, 0, -1, 500), TTL: []int64{500}},
				// TAT at 600 ms, 250 ms ahead: room for 2.5 requests, 2 whole ones.
				{At: 350 * milli, Args: g(5, 10, sec, 0), Want: R(true, 2, 0, 250), TTL: []int64{250}},
				{At: 350 * milli, Args: g(5, 10, sec, 3), Want: R(false, 2, 50, 250), TTL: []int64{250}},
				{At: 400 * milli, Args: g(5, 10, sec, 3), Want: R(true, 0, 0, 500), TTL: []int64{500}},
				// The TAT is exactly now (900 ms): the key is gone, a full burst is back.
				{At: 900 * milli, Args: g(5, 10, sec, 0), Want: R(true, 5, 0, 0), TTL: []int64{NoKey}},
				// 4.1 s idle later still only a burst of 5.
				{At: 5 * sec, Args: g(5, 10, sec, 5), Want: R(true, 0, 0, 500), TTL: []int64{500}},
				{At: 5 * sec, Args: g(5, 10, sec, 1), Want: R(false, 0, 100, 500), TTL: []int64{500}},
			},
		},
		Scenario{
			Name:        "sub-second periods and an interval that is not a whole µs",
			Keys:        []string{"gcra:{c}"},
			CallerClock: true,
			// With a caller clock a write's TTL runs to the TAT by the server's
			// clock, plus Grace.
			Steps: []Step{
				{At: 0, Args: g(2, 1, 100*milli, 2), Want: R(true, 0, 0, 200), TTL: []int64{Grace + 200}},
				{At: 50 * milli, Args: g(2, 1, 100*milli, 1), Want: R(false, 0, 50, 150), TTL: []int64{Grace + 150}},
				{At: 100 * milli, Args: g(2, 1, 100*milli, 1), Want: R(true, 0, 0, 200), TTL: []int64{Grace + 200}},
				// 3 per ms: T = 333.33 µs, rounded up to 334; burst 3 is 1002 µs,
				// reset_after 2 ms, and a TTL of 1002 + 1000 µs, rounded up.
				{At: sec, Args: g(3, 3, milli, 3), Want: R(true, 0, 0, 2), TTL: []int64{Grace + 2}},
				// 668 µs ahead = 2 intervals: one more fits; TAT at 1336 µs.
				{At: sec + 334*us, Args: g(3, 3, milli, 1), Want: R(true, 0, 0, 2), TTL: []int64{Grace + 2}},
				// 836 µs ahead: 168 µs too far, rounded up to 1 ms. (No PTTL
				// here: the key set at 334 µs with PX 3 has 2834 µs left, which
				// a server counting in ms reads as 3 and miniredis as 2.)
				{At: sec + 500*us, Args: g(3, 3, milli, 1), Want: R(false, 0, 1, 1)},
				// The nominal 2 x 333.33 µs would pass at 667 µs; the rounded
				// interval passes 1 µs later.
				{At: sec + 667*us, Args: g(3, 3, milli, 1), Want: R(false, 0, 1, 1)},
				{At: sec + 668*us, Args: g(3, 3, milli, 1), Want: R(true, 0, 0, 2), TTL: []int64{Grace + 2}},
			},
		},
		Scenario{
			Name: "a day-long period",
			Keys: []string{"gcra:{d}"},
			// T = 86.4 s; burst 1000 is a whole day.
			Steps: []Step{
				{At: 0, Args: g(1000, 1000, 24*time.Hour, 1000), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
				// 86313.601 s ahead, 999 intervals are 86313.6 s: 1 ms too far.
				{At: 86399 * milli, Args: g(1000, 1000, 24*time.Hour, 1), Want: R(false, 0, 1, 86313601), TTL: []int64{86313601}},
				{At: 86400 * milli, Args: g(1000, 1000, 24*time.Hour, 1), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
				// TAT at 86486.4 s: 43286.4 s = 501 intervals ahead at 12 h, so
				// 499 fit and 500 wait one interval.
				{At: 12 * time.Hour, Args: g(1000, 1000, 24*time.Hour, 500), Want: R(false, 499, 86400, 43286400), TTL: []int64{43286400}},
				{At: 12 * time.Hour, Args: g(1000, 1000, 24*time.Hour, 499), Want: R(true, 0, 0, 86400000), TTL: []int64{86400000}},
			},
		},
		Scenario{
			Name:        "out-of-order caller clocks never move the TAT back",
			Keys:        []string{"gcra:{e}"},
			CallerClock: true,
			// With a caller clock a write's TTL runs to the TAT by the server's
			// clock, plus Grace.
			Steps: []Step{
				// TAT at 12 s.
				{At: 10 * sec, Args: g(2, 1, sec, 2), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				// A call stamped 9 s sees the TAT 3 s ahead: it waits until its
				// clock reads 11 s. The server clock stays at 10 s.
				{At: 9 * sec, Args: g(2, 1, sec, 1), Want: R(false, 0, 2000, 3000), TTL: []int64{Grace + 2000}},
				// TAT at 13 s.
				{At: 11 * sec, Args: g(2, 1, sec, 1), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				// Late again: no credit for the time it missed, and a peek agrees.
				{At: 10500 * milli, Args: g(2, 1, sec, 1), Want: R(false, 0, 1500, 2500), TTL: []int64{Grace + 2000}},
				{At: 10500 * milli, Args: g(2, 1, sec, 0), Want: R(false, 0, 1500, 2500), TTL: []int64{Grace + 2000}},
				// TAT at 14 s.
				{At: 12 * sec, Args: g(2, 1, sec, 1), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				// With burst 10 a call stamped 5 s fits (9 s ahead = 9 intervals):
				// the TAT moves forward by exactly one interval, to 15 s. Its
				// reset_after of 10 s counts from its own clock; the key's TTL
				// runs to the TAT by the server's clock (3 s), plus Grace: a
				// lagging clock does not stretch it.
				{At: 5 * sec, Args: g(10, 1, sec, 1), Want: R(true, 0, 0, 10000), TTL: []int64{Grace + 3000}},
				{At: 12 * sec, Args: g(10, 1, sec, 0), Want: R(true, 7, 0, 3000), TTL: []int64{Grace + 3000}},
			},
		},
		Scenario{
			Name:    "bad input is an error and leaves the key alone",
			Keys:    []string{"gcra:{f}"},
			Strings: map[string]string{"gcra:{wrong}": "x"},
			Steps: []Step{
				{At: 0, Args: g(5, 1, sec, 1), Want: R(true, 4, 0, 1000), TTL: []int64{1000}},
				{Args: Args(5, 1, 1000, "all"), Err: "BADARG takes 1 key and 5 arguments, then 1 to 64 requests of 2 (cost, deadline), got 1 and 6"},
				{Args: Args(5, 1, 1000, "all", 1, 0), Err: "BADARG takes 1 key and 5 arguments, then 1 to 64 requests of 2 (cost, deadline), got 1 and 8"},
				{Args: Args(5, 1, 1000, "some", 1), Err: "BADARG take must be 'all', 'at_most', 'refund' or 'charge'"},
				// The layouts of earlier versions, gcra.lua's (cost, now,
				// deadline) and gcra_at_most.lua's (n, now, deadline): every
				// one of them is refused, none misread.
				{Raw: Args(5, 1, 1000, 1, 0, 0), Err: "BADARG take must be 'all', 'at_most', 'refund' or 'charge'"},
				{Raw: Args(5, 1, 1000, 0, 0, 0), Err: "BADARG take must be 'all', 'at_most', 'refund' or 'charge'"},
				{Raw: Args(5, 1, 1000, 3, 0, 4503599627370496), Err: "BADARG take must be 'all', 'at_most', 'refund' or 'charge'"},
				{Args: Args("abc", 1, 1000, "all", 1), Err: "BADARG burst must be an integer from 1 to 1000000000, got 'abc'"},
				{Args: Args("nan", 1, 1000, "all", 1), Err: "BADARG burst"},
				{Args: Args("inf", 1, 1000, "all", 1), Err: "BADARG burst"},
				{Args: Args("-inf", 1, 1000, "all", 1), Err: "BADARG burst"},
				{Args: Args(0, 1, 1000, "all", 1), Err: "BADARG burst"},
				{Args: Args(-5, 1, 1000, "all", 1), Err: "BADARG burst"},
				{Args: Args(1.5, 1, 1000, "all", 1), Err: "BADARG burst"},
				{Args: Args("1e10", 1, 1000, "all", 1), Err: "BADARG burst"},
				{Args: Args("", 1, 1000, "all", 1), Err: "BADARG burst must be an integer from 1 to 1000000000, got ''"},
				{Args: Args(5, 0, 1000, "all", 1), Err: "BADARG rate must be an integer from 1 to 1000000000, got '0'"},
				{Args: Args(5, "nan", 1000, "all", 1), Err: "BADARG rate"},
				{Args: Args(5, "2e9", 1000, "all", 1), Err: "BADARG rate"},
				{Args: Args(5, 1, 0, "all", 1), Err: "BADARG period must be an integer from 1 to 100000000000, got '0'"},
				{Args: Args(5, 1, "0.5", "all", 1), Err: "BADARG period"},
				{Args: Args(5, 1, "-inf", "all", 1), Err: "BADARG period"},
				{Args: Args(5, 1, "1e12", "all", 1), Err: "BADARG period"},
				// A µs is the finest interval: 1001 per ms is too fast.
				{Args: Args(5, 1001, 1, "all", 1), Err: "BADARG rate must be at most one per µs (period*1000)"},
				{Args: Args(5, 1, 1000, "all", -1), Err: "BADARG cost of request 1 must be an integer from 0 to 1000000000, got '-1'"},
				{Args: Args(5, 1, 1000, "all", 0.5), Err: "BADARG cost"},
				{Args: Args(5, 1, 1000, "all", "1e10"), Err: "BADARG cost"},
				{Args: Args(5, 1, 1000, "all", 1, 0, 1, "x", 1), Err: "BADARG deadline of request 2 must be an integer from 0 to 4503599627370496, got 'x'"},
				{Args: Args(5, 1, 1000, "all", 1, 0, 1, 0, 1, 0, "1.5"), Err: "BADARG cost of request 4 must be an integer from 0 to 1000000000, got '1.5'"},
				{Args: g(5, 1, sec, 1), Now: "-1", Err: "BADARG now"},
				{Args: g(5, 1, sec, 1), Now: "1.5", Err: "BADARG now"},
				{Args: g(5, 1, sec, 1), Now: "1e300", Err: "BADARG now"},
				{Args: g(5, 1, sec, 1), Now: "nan", Err: "BADARG now"},
				{Args: g(5, 1, sec, 1), Now: "x", Err: "BADARG now"},
				// Each value is in range, but burst*T is 1.001e15 µs.
				{Args: Args(1000000000, 1, 1001, "all", 1), Err: "BADARG burst*period/rate must be at most 1e15 µs (31 years)"},
				// The same with T = 1 s is exactly 1e15 µs and passes. The key
				// written by the first step (T = 1 s) is 1 s ahead: one interval.
				{At: 0, Args: Args(1000000000, 1, 1000, "all", 0), Want: R(true, 999999999, 0, 1000), TTL: []int64{1000}},
				{At: 500 * milli, Args: g(5, 1, sec, 1), Want: R(true, 3, 0, 1500), TTL: []int64{1500}},
			},
		},
		Scenario{
			Name:    "a key that holds no TAT is an error, never overwritten",
			Keys:    []string{"gcra:{wrong}"},
			Strings: map[string]string{"gcra:{wrong}": "x"},
			Steps: []Step{
				{At: 0, Args: g(5, 1, sec, 1), Err: "BADSTATE", TTL: []int64{-1}},
				{At: 0, Args: g(5, 1, sec, 0), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name:    "a TAT that is not a whole µs is an error too",
			Keys:    []string{"gcra:{float}"},
			Strings: map[string]string{"gcra:{float}": "1767225600200000.25200000/200000"},
			Steps: []Step{
				{At: 0, Args: g(5, 1, sec, 1), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name:    "a TAT without its interval and lead is an error too",
			Keys:    []string{"gcra:{bare}"},
			Strings: map[string]string{"gcra:{bare}": "1767225600200000"},
			Steps: []Step{
				{At: 0, Args: g(5, 1, sec, 1), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
	)
}

func init() {
	sec := time.Second
	// A TAT one interval ahead of its write, as gcra.lua writes it after one
	// request on an idle key, in its short form (the TAT modulo 1e10) and in
	// its long one: both are the same state, and a write leaves the form its
	// lead calls for.
	for _, form := range []struct {
		name  string
		state func(tat, interval, lead int64) string
	}{{"short", func(tat, interval, _ int64) string { return GCRAShortState(tat, interval) }}, {"long", GCRALongState}} {
		register(Spec{Script: "gcra"}, Scenario{
			Name: "a TAT one interval ahead, in its " + form.name + " form",
			Keys: []string{"gcra:{" + form.name + "}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "gcra:{" + form.name + "}", Type: "string", Vals: []string{form.state(t0+500000, 500000, 500000)}, TTL: 60000}}
			},
			Steps: []Step{
				// 2 at once, 2 per s: one of 2 is used.
				{At: 0, Args: Args(2, 2, sec, "all", 0), Want: R(true, 1, 0, 500), TTL: []int64{60000}},
				{At: 0, Args: Args(2, 2, sec, "all", 2), Want: R(false, 1, 500, 500), TTL: []int64{60000}},
				{At: 0, Args: Args(2, 2, sec, "all", 1), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				// 1.5 s on the key is idle: one request leaves the short form.
				{At: 1500 * time.Millisecond, Args: Args(2, 2, sec, "all", 1), Want: R(true, 1, 0, 500), TTL: []int64{500}},
			},
		})
	}
}
