package scenario

import "time"

// gcra.lua's take refund and take charge, which settle a reservation (a
// take all, then its final cost): Args are burst, rate, period, the word
// and the costs; a reply is the units moved, remaining, retry after (until
// a request of 1 passes) and reset after.
func init() {
	// s is one call of take word with the costs of its requests, each but
	// the last followed by a deadline of 0 (the last one's is the step's).
	s := func(burst, rate int, period time.Duration, take string, costs ...int) []string {
		vals := []any{burst, rate, period, take}
		for i, c := range costs {
			if i > 0 {
				vals = append(vals, 0)
			}
			vals = append(vals, c)
		}
		return Args(vals...)
	}
	// U is a reply of refund or charge: the units moved, remaining, retry
	// after and reset after in ms.
	U := func(moved, remaining, retryMs, resetMs int64) []int64 {
		return []int64{moved, remaining, retryMs, resetMs}
	}
	sec, ms := time.Second, time.Millisecond
	register(Spec{Script: "gcra"},
		Scenario{
			Name: "refund gives units back, never more than a full burst",
			Keys: []string{"settle:{a}"},
			// T = 100 ms, burst 5.
			Steps: []Step{
				{At: 0, Args: s(5, 10, sec, "all", 3), Want: R(true, 2, 0, 300), TTL: []int64{300}},
				{At: 0, Args: s(5, 10, sec, "refund", 2), Want: U(2, 4, 0, 100), TTL: []int64{100}},
				// One unit was ahead: one comes back of 5 asked, and the TAT
				// is now: the key lives on to it (1 ms, the least TTL).
				{At: 0, Args: s(5, 10, sec, "refund", 5), Want: U(1, 5, 0, 0), TTL: []int64{1}},
				// Full: nothing to give back, nothing written.
				{At: 0, Args: s(5, 10, sec, "refund", 1), Want: U(0, 5, 0, 0), TTL: []int64{1}},
				// A part of an interval is a unit: 250 ms ahead is 3 used.
				{At: 50 * ms, Args: s(5, 10, sec, "all", 3), Want: R(true, 2, 0, 300), TTL: []int64{300}},
				{At: 100 * ms, Args: s(5, 10, sec, "refund", 2), Want: U(2, 4, 0, 50), TTL: []int64{50}},
				// 50 ms ahead, below one interval: the lead is kept as it is.
				{At: 100 * ms, Args: s(5, 10, sec, "all", 0), Want: R(true, 4, 0, 50), TTL: []int64{50}},
				{At: 100 * ms, Args: s(5, 10, sec, "all", 4), Want: R(true, 0, 0, 450), TTL: []int64{450}},
				{At: 100 * ms, Args: s(5, 10, sec, "all", 1), Want: R(false, 0, 50, 450), TTL: []int64{450}},
			},
		},
		Scenario{
			Name: "refund and charge on a key with no state",
			Keys: []string{"settle:{b}"},
			Steps: []Step{
				// A refund finds nothing to give back and creates nothing.
				{At: 0, Args: s(5, 10, sec, "refund", 3), Want: U(0, 5, 0, 0), TTL: []int64{NoKey}},
				// A cost of 0 moves nothing and writes nothing.
				{At: 0, Args: s(5, 10, sec, "charge", 0), Want: U(0, 5, 0, 0), TTL: []int64{NoKey}},
				{At: 0, Args: s(5, 10, sec, "refund", 0), Want: U(0, 5, 0, 0), TTL: []int64{NoKey}},
				// A charge counts from now, as a take would.
				{At: 0, Args: s(5, 10, sec, "charge", 2), Want: U(2, 3, 0, 200), TTL: []int64{200}},
				{At: 0, Args: s(5, 10, sec, "refund", 0), Want: U(0, 3, 0, 200), TTL: []int64{200}},
			},
		},
		Scenario{
			Name: "charge into debt: takes are denied until it drains, retry_after exact",
			Keys: []string{"settle:{c}"},
			Steps: []Step{
				{At: 0, Args: s(5, 10, sec, "all", 4), Want: R(true, 1, 0, 400), TTL: []int64{400}},
				// 800 ms ahead, 300 ms past the burst: a request of 1 waits
				// until 400 ms are left.
				{At: 0, Args: s(5, 10, sec, "charge", 4), Want: U(4, 0, 400, 800), TTL: []int64{800}},
				{At: 100 * ms, Args: s(5, 10, sec, "all", 1), Want: R(false, 0, 300, 700), TTL: []int64{700}},
				{At: 399 * ms, Args: s(5, 10, sec, "all", 0), Want: R(false, 0, 1, 401), TTL: []int64{401}},
				{At: 400 * ms, Args: s(5, 10, sec, "all", 1), Want: R(true, 0, 0, 500), TTL: []int64{500}},
				// A refund of a debt gives back what it asks, past the burst
				// too: 1.5 s ahead, then 700 ms.
				{At: 400 * ms, Args: s(5, 10, sec, "charge", 10), Want: U(10, 0, 1100, 1500), TTL: []int64{1500}},
				{At: 400 * ms, Args: s(5, 10, sec, "refund", 8), Want: U(8, 0, 300, 700), TTL: []int64{700}},
				// The debt drained: the key expires when its TAT is reached.
				{At: 1100 * ms, Args: s(5, 10, sec, "all", 0), Want: R(true, 5, 0, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name: "a charge takes at most a debt of 1e15 µs past a full burst",
			Keys: []string{"settle:{d}"},
			// T = 1e14 µs (1e11 ms at 1 a period), burst 1: the TAT may run
			// 1e14 + 1e15 µs ahead, 11 intervals.
			Steps: []Step{
				{At: 0, Args: s(1, 1, 100000000000*ms, "charge", 1000000000), Want: U(11, 0, 1100000000000, 1100000000000), TTL: []int64{1100000000000}},
				{At: 0, Args: s(1, 1, 100000000000*ms, "charge", 1), Want: U(0, 0, 1100000000000, 1100000000000), TTL: []int64{1100000000000}},
				{At: 0, Args: s(1, 1, 100000000000*ms, "refund", 10), Want: U(10, 0, 100000000000, 100000000000), TTL: []int64{100000000000}},
			},
		},
		Scenario{
			Name: "refund and charge count in the current limit's interval; a debt is not capped by a changed burst",
			Keys: []string{"settle:{e}"},
			Steps: []Step{
				// Reserved at 10 per s: 3 intervals of 100 ms.
				{At: 0, Args: s(5, 10, sec, "all", 3), Want: R(true, 2, 0, 300), TTL: []int64{300}},
				// Settled at 20 per s: the 3 used are 150 ms, and one is 50 ms.
				{At: 0, Args: s(5, 20, sec, "refund", 1), Want: U(1, 3, 0, 100), TTL: []int64{100}},
				// 600 ms ahead, 350 ms past the 250 ms burst.
				{At: 0, Args: s(5, 20, sec, "charge", 10), Want: U(10, 0, 400, 600), TTL: []int64{600}},
				// Back at 10 per s: the burst's 5 units are 500 ms, the 7 of
				// debt 700 ms.
				{At: 0, Args: s(5, 10, sec, "all", 0), Want: R(false, 0, 800, 1200), TTL: []int64{600}},
				// A lowered burst caps what is within the burst, not the debt:
				// 2 units of 100 ms, then 700 ms.
				{At: 0, Args: s(2, 10, sec, "all", 0), Want: R(false, 0, 800, 900), TTL: []int64{600}},
				{At: 0, Args: s(2, 10, sec, "charge", 1), Want: U(1, 0, 900, 1000), TTL: []int64{1000}},
			},
		},
		Scenario{
			Name: "a refund or a charge run past its deadline answers expired and changes nothing",
			Keys: []string{"settle:{f}"},
			Steps: []Step{
				{At: 0, Args: s(5, 10, sec, "all", 3), Want: R(true, 2, 0, 300), TTL: []int64{300}},
				{At: 0, Args: s(5, 10, sec, "refund", 3), DeadlineIn: -sec, Want: X(), TTL: []int64{300}},
				{At: 0, Args: s(5, 10, sec, "charge", 3), DeadlineIn: -time.Microsecond, Want: X(), TTL: []int64{300}},
				{At: 0, Args: s(5, 10, sec, "refund", 1), DeadlineIn: sec, Want: U(1, 3, 0, 200), TTL: []int64{200}},
			},
		},
		Scenario{
			Name: "batches of refunds and of charges are their calls in a row",
			Keys: []string{"settle:{g}"},
			Steps: []Step{
				{At: 0, Args: s(5, 10, sec, "all", 5), Want: R(true, 0, 0, 500), TTL: []int64{500}},
				{At: 0, Args: s(5, 10, sec, "refund", 1, 2, 0, 5), Want: Batch(
					U(1, 1, 0, 400), U(2, 3, 0, 200), U(0, 3, 0, 200), U(2, 5, 0, 0)),
					TTL: []int64{1}},
				{At: 0, Args: s(5, 10, sec, "charge", 3, 0, 4), Want: Batch(
					U(3, 2, 0, 300), U(0, 2, 0, 300), U(4, 0, 300, 700)),
					TTL: []int64{700}},
			},
		},
		Scenario{
			Name:        "refund and charge with a caller clock: waits count from it, the key lives Grace longer",
			Keys:        []string{"settle:{h}"},
			CallerClock: true,
			Steps: []Step{
				{At: 10 * sec, Args: s(2, 1, sec, "all", 2), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				{At: 10 * sec, Args: s(2, 1, sec, "refund", 1), Want: U(1, 1, 0, 1000), TTL: []int64{Grace + 1000}},
				{At: 10 * sec, Args: s(2, 1, sec, "refund", 1), Want: U(1, 2, 0, 0), TTL: []int64{Grace}},
				// Stamped 9 s: the TAT (10 s) is 1 s ahead of it.
				{At: 9 * sec, Args: s(2, 1, sec, "charge", 2), Want: U(2, 0, 2000, 3000), TTL: []int64{Grace + 2000}},
			},
		},
		Scenario{
			Name:        "a refund with a clock behind the write before it is no debt: a changed limit then locks nothing out",
			Keys:        []string{"settle:{j}"},
			CallerClock: true,
			Steps: []Step{
				// A caller 20 s ahead of the server: the TAT is 21 s on.
				{At: 20 * sec, Skew: 20 * sec, Args: s(2, 1, sec, "all", 1), Want: R(true, 1, 0, 1000), TTL: []int64{Grace + 21000}},
				// One on the server's clock gives a unit back: 20 s ahead of it,
				// all of it the first caller's clock, none of it charged.
				{At: 0, Args: s(2, 1, sec, "refund", 1), Want: U(1, 0, 19000, 20000), TTL: []int64{Grace + 20000}},
				// At 1 per 2 s the TAT stays where it is: 20 s ahead, not the
				// 18 s past a full burst counted again in 2 s intervals (38 s).
				{At: 0, Args: s(2, 1, 2*sec, "all", 0), Want: R(false, 0, 18000, 20000), TTL: []int64{Grace + 20000}},
			},
		},
		Scenario{
			Name:    "refund and charge: bad words and foreign state are errors and change nothing",
			Keys:    []string{"settle:{i}"},
			Strings: map[string]string{"settle:{i}": TokenBucketState(T0, 5)},
			Steps: []Step{
				{Args: s(5, 10, sec, "Refund", 1), Err: "BADARG take must be 'all', 'at_most', 'refund' or 'charge'"},
				{Args: s(5, 10, sec, "settle", 1), Err: "BADARG take must be"},
				{Args: s(5, 10, sec, "refund", 1), Err: "BADSTATE", TTL: []int64{-1}},
				{Args: s(5, 10, sec, "charge", 0), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name: "the settled form dated past TIME + 60 s is refused and left as it is",
			Keys: []string{"settle:{j}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "settle:{j}", Type: "string", Vals: []string{GCRASettledState(t0+60000001+900000, 100000, 900000, 400000)}, TTL: 86400000}}
			},
			Steps: []Step{
				{Args: s(5, 10, sec, "all", 0), Err: "BADSTATE", TTL: []int64{86400000}},
				{Args: s(5, 10, sec, "refund", 1), Err: "BADSTATE", TTL: []int64{86400000}},
			},
		},
		Scenario{
			Name: "the settled form is read with its debt",
			Keys: []string{"settle:{k}"},
			// Written at t0: 800 ms ahead, 300 ms past a burst of 5 at 10 per s.
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "settle:{k}", Type: "string", Vals: []string{GCRASettledState(t0+800000, 100000, 800000, 300000)}, TTL: 800}}
			},
			Steps: []Step{
				{Args: s(5, 10, sec, "all", 0), Want: R(false, 0, 400, 800), TTL: []int64{800}},
				{Args: s(5, 10, sec, "refund", 4), Want: U(4, 1, 0, 400), TTL: []int64{400}},
			},
		},
	)

	// token_bucket.lua's refill *_refund and *_charge: the same settling,
	// in tokens (capacity 5, 10 a second: 100 ms a token, smooth).
	register(Spec{Script: "token_bucket"},
		Scenario{
			Name: "token bucket: a refund adds tokens back, up to capacity",
			Keys: []string{"settle:{tb-a}"},
			Steps: []Step{
				{At: 0, Args: s(5, 10, sec, "smooth", 3), Want: R(true, 2, 0, 300), TTL: []int64{300}},
				{At: 0, Args: s(5, 10, sec, "smooth_refund", 2), Want: U(2, 4, 0, 100), TTL: []int64{100}},
				{At: 0, Args: s(5, 10, sec, "smooth_refund", 5), Want: U(1, 5, 0, 0), TTL: []int64{1}},
				// Full: nothing to give back, nothing written.
				{At: 0, Args: s(5, 10, sec, "smooth_refund", 1), Want: U(0, 5, 0, 0), TTL: []int64{1}},
			},
		},
		Scenario{
			Name: "token bucket: refund and charge on a key with no state",
			Keys: []string{"settle:{tb-b}"},
			Steps: []Step{
				{At: 0, Args: s(5, 10, sec, "smooth_refund", 3), Want: U(0, 5, 0, 0), TTL: []int64{NoKey}},
				{At: 0, Args: s(5, 10, sec, "smooth_charge", 0), Want: U(0, 5, 0, 0), TTL: []int64{NoKey}},
				// Charged from full: 2 below zero, a take of 1 waits 300 ms.
				{At: 0, Args: s(5, 10, sec, "smooth_charge", 7), Want: U(7, 0, 300, 700), TTL: []int64{700}},
			},
		},
		Scenario{
			Name: "token bucket: a charge into debt denies takes until the refill covers them",
			Keys: []string{"settle:{tb-c}"},
			Steps: []Step{
				{At: 0, Args: s(5, 10, sec, "smooth", 4), Want: R(true, 1, 0, 400), TTL: []int64{400}},
				{At: 0, Args: s(5, 10, sec, "smooth_charge", 4), Want: U(4, 0, 400, 800), TTL: []int64{800}},
				{At: 100 * ms, Args: s(5, 10, sec, "smooth", 1), Want: R(false, 0, 300, 700), TTL: []int64{700}},
				{At: 399 * ms, Args: s(5, 10, sec, "smooth", 0), Want: R(false, 0, 1, 401), TTL: []int64{401}},
				{At: 400 * ms, Args: s(5, 10, sec, "smooth", 1), Want: R(true, 0, 0, 500), TTL: []int64{500}},
				{At: 900 * ms, Args: s(5, 10, sec, "smooth", 0), Want: R(true, 5, 0, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name: "token bucket: interval refill, refund and charge between its steps",
			Keys: []string{"settle:{tb-d}"},
			// 5 tokens at once per whole second.
			Steps: []Step{
				{At: 0, Args: s(5, 5, sec, "interval", 5), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				{At: 500 * ms, Args: s(5, 5, sec, "interval_refund", 2), Want: U(2, 2, 0, 500), TTL: []int64{500}},
				// 4 below zero: the step at 1 s brings 1, the one at 2 s fills.
				{At: 500 * ms, Args: s(5, 5, sec, "interval_charge", 6), Want: U(6, 0, 500, 1500), TTL: []int64{1500}},
				{At: 1000 * ms, Args: s(5, 5, sec, "interval", 1), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
			},
		},
		Scenario{
			Name: "token bucket: a debt is at most the tokens 1e15 µs credit, at the current limit",
			Keys: []string{"settle:{tb-e}"},
			// 2 tokens per 1e14 µs: at most 20 below zero.
			Steps: []Step{
				{At: 0, Args: s(1, 2, 100000000000*ms, "smooth_charge", 1000000000), Want: U(21, 0, 1050000000000, 1050000000000), TTL: []int64{1050000000000}},
				// At 1 per 1e14 µs the debt counts 10, which take 1.1e15 µs.
				{At: 0, Args: s(1, 1, 100000000000*ms, "smooth", 0), Want: R(false, 0, 1100000000000, 1100000000000), TTL: []int64{1050000000000}},
			},
		},
		Scenario{
			Name: "token bucket: a refund or a charge past its deadline answers expired and changes nothing",
			Keys: []string{"settle:{tb-f}"},
			Steps: []Step{
				{At: 0, Args: s(5, 10, sec, "smooth", 3), Want: R(true, 2, 0, 300), TTL: []int64{300}},
				{At: 0, Args: s(5, 10, sec, "smooth_refund", 3), DeadlineIn: -sec, Want: X(), TTL: []int64{300}},
				{At: 0, Args: s(5, 10, sec, "interval_charge", 3), DeadlineIn: -time.Microsecond, Want: X(), TTL: []int64{300}},
			},
		},
		Scenario{
			Name: "token bucket: batches of refunds are their calls in a row",
			Keys: []string{"settle:{tb-g}"},
			Steps: []Step{
				{At: 0, Args: s(5, 10, sec, "smooth", 5), Want: R(true, 0, 0, 500), TTL: []int64{500}},
				{At: 0, Args: s(5, 10, sec, "smooth_refund", 1, 2, 0, 5), Want: Batch(
					U(1, 1, 0, 400), U(2, 3, 0, 200), U(0, 3, 0, 200), U(2, 5, 0, 0)),
					TTL: []int64{1}},
			},
		},
		Scenario{
			Name:        "token bucket: refund and charge with a caller clock",
			Keys:        []string{"settle:{tb-h}"},
			CallerClock: true,
			Steps: []Step{
				{At: 10 * sec, Args: s(2, 1, sec, "smooth", 2), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				{At: 10 * sec, Args: s(2, 1, sec, "smooth_refund", 1), Want: U(1, 1, 0, 1000), TTL: []int64{Grace + 1000}},
				// Stamped 9 s, judged at the stored 10 s; waits from 9 s.
				{At: 9 * sec, Args: s(2, 1, sec, "smooth_charge", 2), Want: U(2, 0, 3000, 4000), TTL: []int64{Grace + 3000}},
			},
		},
		Scenario{
			Name:    "token bucket: bad words and foreign state are errors and change nothing",
			Keys:    []string{"settle:{tb-i}"},
			Strings: map[string]string{"settle:{tb-i}": GCRAShortState(T0+100000, 100000)},
			Steps: []Step{
				{Args: s(5, 10, sec, "smooth_settle", 1), Err: "BADARG refill must be"},
				{Args: s(5, 10, sec, "refund", 1), Err: "BADARG refill must be"},
				{Args: s(5, 10, sec, "smooth_refund", 1), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
	)
}
