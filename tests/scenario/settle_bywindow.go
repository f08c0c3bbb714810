package scenario

import (
	"fmt"
	"time"
)

// Settling a reservation on the leaky bucket, the sliding window counter
// and the sliding window log: the settle word (and for the windows the
// instant the reservation was counted at, Held) after the deadline. The
// reply of a settle is whether any unit moved, remaining, retry after
// (until a cost of 1 passes) and reset after.
func init() {
	sec, ms := time.Second, time.Millisecond
	// lb is a pour, or with a word a settle, of leaky_bucket.
	lb := func(capacity, rate int, period time.Duration, cost int, word ...any) []string {
		return Args(append([]any{capacity, rate, period, cost}, word...)...)
	}
	register(Spec{Script: "leaky_bucket", CostArg: 3, NowArg: 4},
		Scenario{
			Name: "leaky bucket: a refund lowers the water, never below empty",
			Keys: []string{"settle:{lb-a}"},
			// A unit is 100 ms of water; the bucket holds 500 ms.
			Steps: []Step{
				{At: 0, Args: lb(5, 10, sec, 3), Want: R(true, 2, 0, 300), TTL: []int64{300}},
				{At: 0, Args: lb(5, 10, sec, 2, "refund"), Want: R(true, 4, 0, 100), TTL: []int64{100}},
				// One unit was left: it comes back of 5 asked, and the
				// empty bucket is written (1 ms, the least TTL).
				{At: 0, Args: lb(5, 10, sec, 5, "refund"), Want: R(true, 5, 0, 0), TTL: []int64{1}},
				// Empty: nothing to give back, nothing written.
				{At: 0, Args: lb(5, 10, sec, 1, "refund"), Want: R(false, 5, 0, 0), TTL: []int64{1}},
				// A part of a unit is a unit: 250 ms of water is 3 used.
				{At: 50 * ms, Args: lb(5, 10, sec, 3), Want: R(true, 2, 0, 300), TTL: []int64{300}},
				{At: 100 * ms, Args: lb(5, 10, sec, 2, "refund"), Want: R(true, 4, 0, 50), TTL: []int64{50}},
				// 50 ms of water, below one unit, is kept as it is.
				{At: 100 * ms, Args: lb(5, 10, sec, 0), Want: R(true, 4, 0, 50), TTL: []int64{50}},
				{At: 100 * ms, Args: lb(5, 10, sec, 4), Want: R(true, 0, 0, 450), TTL: []int64{450}},
				{At: 100 * ms, Args: lb(5, 10, sec, 1), Want: R(false, 0, 50, 450), TTL: []int64{450}},
			},
		},
		Scenario{
			Name: "leaky bucket: refund and charge on a key with no state",
			Keys: []string{"settle:{lb-b}"},
			Steps: []Step{
				{At: 0, Args: lb(5, 10, sec, 3, "refund"), Want: R(false, 5, 0, 0), TTL: []int64{NoKey}},
				{At: 0, Args: lb(5, 10, sec, 0, "charge"), Want: R(false, 5, 0, 0), TTL: []int64{NoKey}},
				{At: 0, Args: lb(5, 10, sec, 0, "refund"), Want: R(false, 5, 0, 0), TTL: []int64{NoKey}},
				{At: 0, Args: lb(5, 10, sec, 2, "charge"), Want: R(true, 3, 0, 200), TTL: []int64{200}},
			},
		},
		Scenario{
			Name: "leaky bucket: a charge into debt denies pours until it drains, retry_after exact",
			Keys: []string{"settle:{lb-c}"},
			Steps: []Step{
				{At: 0, Args: lb(5, 10, sec, 4), Want: R(true, 1, 0, 400), TTL: []int64{400}},
				// 800 ms of water, 300 ms past a full bucket: a pour of 1
				// waits until 400 ms are left.
				{At: 0, Args: lb(5, 10, sec, 4, "charge"), Want: R(true, 0, 400, 800), TTL: []int64{800}},
				{At: 100 * ms, Args: lb(5, 10, sec, 1), Want: R(false, 0, 300, 700), TTL: []int64{700}},
				{At: 399 * ms, Args: lb(5, 10, sec, 0), Want: R(false, 0, 1, 401), TTL: []int64{401}},
				{At: 400 * ms, Args: lb(5, 10, sec, 1), Want: R(true, 0, 0, 500), TTL: []int64{500}},
				// A refund of a debt gives back what it asks, past the
				// capacity too: 1.5 s of water, then 700 ms.
				{At: 400 * ms, Args: lb(5, 10, sec, 10, "charge"), Want: R(true, 0, 1100, 1500), TTL: []int64{1500}},
				{At: 400 * ms, Args: lb(5, 10, sec, 8, "refund"), Want: R(true, 0, 300, 700), TTL: []int64{700}},
				// Drained: the key expired with its water.
				{At: 1100 * ms, Args: lb(5, 10, sec, 0), Want: R(true, 5, 0, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name: "leaky bucket: a charge takes at most a debt of 1e15 µs past a full bucket",
			Keys: []string{"settle:{lb-d}"},
			// A unit is 1e14 µs, the bucket holds one: 11 units fit.
			Steps: []Step{
				{At: 0, Args: lb(1, 1, 100000000000*ms, 1000000000, "charge"), Want: R(true, 0, 1100000000000, 1100000000000), TTL: []int64{1100000000000}},
				{At: 0, Args: lb(1, 1, 100000000000*ms, 1, "charge"), Want: R(false, 0, 1100000000000, 1100000000000), TTL: []int64{1100000000000}},
				{At: 0, Args: lb(1, 1, 100000000000*ms, 10, "refund"), Want: R(true, 0, 100000000000, 100000000000), TTL: []int64{100000000000}},
			},
		},
		Scenario{
			Name: "leaky bucket: refund and charge count in the current limit's unit; a debt is not capped by a changed capacity",
			Keys: []string{"settle:{lb-e}"},
			Steps: []Step{
				// Poured at 10 per s: 3 units of 100 ms.
				{At: 0, Args: lb(5, 10, sec, 3), Want: R(true, 2, 0, 300), TTL: []int64{300}},
				// Settled at 20 per s: the 3 are 150 ms, and one is 50 ms.
				{At: 0, Args: lb(5, 20, sec, 1, "refund"), Want: R(true, 3, 0, 100), TTL: []int64{100}},
				// 600 ms of water, 350 ms past the 250 ms bucket.
				{At: 0, Args: lb(5, 20, sec, 10, "charge"), Want: R(true, 0, 400, 600), TTL: []int64{600}},
				// Back at 10 per s: the bucket's 5 units are 500 ms, the 7
				// of debt 700 ms.
				{At: 0, Args: lb(5, 10, sec, 0), Want: R(false, 0, 800, 1200), TTL: []int64{600}},
				// A lowered capacity caps what is within it, not the debt.
				{At: 0, Args: lb(2, 10, sec, 0), Want: R(false, 0, 800, 900), TTL: []int64{600}},
				{At: 0, Args: lb(2, 10, sec, 1, "charge"), Want: R(true, 0, 900, 1000), TTL: []int64{1000}},
			},
		},
		Scenario{
			Name: "leaky bucket: a refund or a charge past its deadline is EXPIRED and changes nothing",
			Keys: []string{"settle:{lb-f}"},
			Steps: []Step{
				{At: 0, Args: lb(5, 10, sec, 3), Want: R(true, 2, 0, 300), TTL: []int64{300}},
				{At: 0, Args: lb(5, 10, sec, 3, "refund"), DeadlineIn: -sec, Err: "EXPIRED", TTL: []int64{300}},
				{At: 0, Args: lb(5, 10, sec, 3, "charge"), DeadlineIn: -time.Microsecond, Err: "EXPIRED", TTL: []int64{300}},
				{At: 0, Args: lb(5, 10, sec, 1, "refund"), DeadlineIn: sec, Want: R(true, 3, 0, 200), TTL: []int64{200}},
			},
		},
		Scenario{
			Name:        "leaky bucket: refund and charge with a caller clock",
			Keys:        []string{"settle:{lb-g}"},
			CallerClock: true,
			Steps: []Step{
				{At: 10 * sec, Args: lb(2, 1, sec, 2), Want: R(true, 0, 0, 2000), TTL: []int64{Grace + 2000}},
				{At: 10 * sec, Args: lb(2, 1, sec, 1, "refund"), Want: R(true, 1, 0, 1000), TTL: []int64{Grace + 1000}},
				{At: 10 * sec, Args: lb(2, 1, sec, 1, "refund"), Want: R(true, 2, 0, 0), TTL: []int64{Grace}},
				// Stamped 9 s, judged at the stored 10 s; waits from 9 s.
				{At: 9 * sec, Args: lb(2, 1, sec, 2, "charge"), Want: R(true, 0, 2000, 3000), TTL: []int64{Grace + 2000}},
			},
		},
		Scenario{
			Name:    "leaky bucket: bad words and foreign state are errors and change nothing",
			Keys:    []string{"settle:{lb-h}"},
			Strings: map[string]string{"settle:{lb-h}": TokenBucketState(T0, 5)},
			Steps: []Step{
				{Args: lb(5, 10, sec, 1, "Refund"), Err: "BADARG settle must be 'refund' or 'charge'"},
				{Args: lb(5, 10, sec, 1, "pour"), Err: "BADARG settle must be"},
				{Args: lb(5, 10, sec, 1, "refund"), Err: "BADSTATE", TTL: []int64{-1}},
				{Args: lb(5, 10, sec, 0, "charge"), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name: "leaky bucket: the settled form is read with its debt",
			Keys: []string{"settle:{lb-i}"},
			// Written at t0: 800 ms of water, 300 ms past a bucket of 5 at 10 per s.
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "settle:{lb-i}", Type: "string", Vals: []string{LeakyBucketSettledState(t0, 100000, 800000, 300000)}, TTL: 800}}
			},
			Steps: []Step{
				{Args: lb(5, 10, sec, 0), Want: R(false, 0, 400, 800), TTL: []int64{800}},
				{Args: lb(5, 10, sec, 4, "refund"), Want: R(true, 1, 0, 400), TTL: []int64{400}},
			},
		},
		Scenario{
			Name: "leaky bucket: the settled form dated past TIME + 60 s is refused and left as it is",
			Keys: []string{"settle:{lb-j}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "settle:{lb-j}", Type: "string", Vals: []string{LeakyBucketSettledState(t0+60000001, 100000, 50000, 0)}, TTL: 86400000}}
			},
			Steps: []Step{
				{Args: lb(5, 10, sec, 0), Err: "BADSTATE", TTL: []int64{86400000}},
				{Args: lb(5, 10, sec, 1, "charge"), Err: "BADSTATE", TTL: []int64{86400000}},
			},
		},
	)

	// swc is an admit, or with a word and the reservation's instant a
	// settle, of sliding_window_counter (limit 10, windows of 1 s).
	swc := func(limit int, window time.Duration, cost int, settle ...any) []string {
		return Args(append([]any{limit, window, cost}, settle...)...)
	}
	register(Spec{Script: "sliding_window_counter", CostArg: 2, NowArg: 3},
		Scenario{
			Name:        "sliding window counter: a refund comes from the window that holds at, never below 0",
			Keys:        []string{"settle:{swc-a}"},
			CallerClock: true,
			Steps: []Step{
				{At: 100 * ms, Args: swc(10, sec, 6), Want: R(true, 4, 0, 1900), TTL: []int64{Grace + 1900}},
				{At: 200 * ms, Args: swc(10, sec, 4, "refund", Held(100*ms)), Want: R(true, 8, 0, 1800), TTL: []int64{Grace + 1800}},
				// The next window: the previous count of 2 weighs 2 at 200 ms in.
				{At: 1200 * ms, Args: swc(10, sec, 5), Want: R(true, 3, 0, 1800), TTL: []int64{Grace + 1800}},
				// At 100 ms is the previous window now: its 2 come back, and
				// the third from the next window, the current one.
				{At: 1300 * ms, Args: swc(10, sec, 3, "refund", Held(100*ms)), Want: R(true, 6, 0, 1700), TTL: []int64{Grace + 1700}},
				{At: 1300 * ms, Args: swc(10, sec, 1, "refund", Held(1200*ms)), Want: R(true, 7, 0, 1700), TTL: []int64{Grace + 1700}},
				// Two windows on, 1.2 s is the previous window: 2 of its 3
				// come back, the one left weighs 1 at 500 ms in.
				{At: 2500 * ms, Args: swc(10, sec, 2, "refund", Held(1200*ms)), Want: R(true, 9, 0, 500), TTL: []int64{Grace + 1500}},
				// 100 ms has slid out of the estimate: nothing comes back.
				{At: 2500 * ms, Args: swc(10, sec, 1, "refund", Held(100*ms)), Want: R(false, 9, 0, 500), TTL: []int64{Grace + 1500}},
				{At: 2500 * ms, Args: swc(10, sec, 0), Want: R(true, 9, 0, 500), TTL: []int64{Grace + 1500}},
			},
		},
		Scenario{
			Name:        "sliding window counter: a reservation judged in the window after at's (behind another caller's count) is refunded",
			Keys:        []string{"settle:{swc-f}"},
			CallerClock: true,
			Steps: []Step{
				// A caller with a clock ahead counts one at 1.1 s.
				{At: 1100 * ms, Args: swc(10, sec, 1), Want: R(true, 9, 0, 1900), TTL: []int64{Grace + 1900}},
				// A reservation at 900 ms is judged at 1 s, counted there.
				{At: 900 * ms, Args: swc(10, sec, 3), Want: R(true, 6, 0, 2100), TTL: []int64{Grace + 1900}},
				// Its refund at 900 ms finds nothing in that window and
				// takes the 3 from the next one.
				{At: 900 * ms, Args: swc(10, sec, 3, "refund", Held(900*ms)), Want: R(true, 9, 0, 2100), TTL: []int64{Grace + 1900}},
				// The window after the current one is never taken from.
				{At: 1100 * ms, Args: swc(10, sec, 5, "refund", Held(1100*ms)), Want: R(true, 10, 0, 0), TTL: []int64{Grace + 1900}},
			},
		},
		Scenario{
			Name:        "sliding window counter: after a reset, a refund takes up to its cost from the window after at's",
			Keys:        []string{"settle:{swc-g}"},
			CallerClock: true,
			Steps: []Step{
				// Counted at 900 ms, then a reset, then 4 counted at 1.2 s.
				{At: 1200 * ms, Args: swc(10, sec, 4), Want: R(true, 6, 0, 1800), TTL: []int64{Grace + 1800}},
				{At: 1200 * ms, Args: swc(10, sec, 3, "refund", Held(900*ms)), Want: R(true, 9, 0, 1800), TTL: []int64{Grace + 1800}},
			},
		},
		Scenario{
			Name:        "sliding window counter: a charge counts in at's window, into debt, or in the current one once at's slid out",
			Keys:        []string{"settle:{swc-b}"},
			CallerClock: true,
			Steps: []Step{
				{At: 0, Args: swc(10, sec, 8), Want: R(true, 2, 0, 2000), TTL: []int64{Grace + 2000}},
				// 15 in the window: one more is admitted once 15 weigh 9,
				// 400 ms into the next window.
				{At: 500 * ms, Args: swc(10, sec, 7, "charge", Held(0)), Want: R(true, 0, 900, 1500), TTL: []int64{Grace + 1500}},
				{At: 1399 * ms, Args: swc(10, sec, 1), Want: R(false, 0, 1, 601), TTL: []int64{Grace + 601}},
				{At: 1400 * ms, Args: swc(10, sec, 1), Want: R(true, 0, 0, 1600), TTL: []int64{Grace + 1600}},
				// Into the previous window: 18 weigh 9 at 500 ms in, and 8
				// at 555.556 ms.
				{At: 1500 * ms, Args: swc(10, sec, 3, "charge", Held(500*ms)), Want: R(true, 0, 56, 1500), TTL: []int64{Grace + 1500}},
				// 500 ms slid out: the charge counts now.
				{At: 3500 * ms, Args: swc(10, sec, 2, "charge", Held(500*ms)), Want: R(true, 8, 0, 1500), TTL: []int64{Grace + 1500}},
			},
		},
		Scenario{
			Name:        "sliding window counter: refund and charge on a key with no state; a changed window",
			Keys:        []string{"settle:{swc-c}"},
			CallerClock: true,
			Steps: []Step{
				{At: 0, Args: swc(10, sec, 3, "refund", Held(0)), Want: R(false, 10, 0, 0), TTL: []int64{NoKey}},
				{At: 0, Args: swc(10, sec, 0, "charge", Held(0)), Want: R(false, 10, 0, 0), TTL: []int64{NoKey}},
				{At: 100 * ms, Args: swc(10, sec, 6, "charge", Held(100*ms)), Want: R(true, 4, 0, 1900), TTL: []int64{Grace + 1900}},
				// At windows of 2 s, 100 ms is in the current one.
				{At: 200 * ms, Args: swc(10, 2*sec, 2, "refund", Held(100*ms)), Want: R(true, 6, 0, 3800), TTL: []int64{Grace + 3800}},
			},
		},
		Scenario{
			Name:        "sliding window counter: bad words, an instant past TIME and foreign state are errors",
			Keys:        []string{"settle:{swc-d}"},
			CallerClock: true,
			Strings:     map[string]string{"settle:{swc-d}": TokenBucketState(T0, 5)},
			Steps: []Step{
				{Args: swc(10, sec, 1, "Refund", Held(0)), Err: "BADARG settle's take must be 'refund' or 'charge'"},
				{Args: swc(10, sec, 1, "refund"), Err: "BADARG at must be an integer"},
				{Args: swc(10, sec, 1, "refund", Held(61*sec)), Err: "BADARG at must be at most"},
				{Args: swc(10, sec, 1, "refund", Held(0)), Err: "BADSTATE", TTL: []int64{-1}},
			},
		},
		Scenario{
			Name: "sliding window counter: counts past the limit and a current count of 0 are read",
			Keys: []string{"settle:{swc-e}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "settle:{swc-e}", Type: "string", Vals: []string{SlidingWindowCounterState(t0/1000, 0, 0, 3000000000)}, TTL: 2000}}
			},
			// 3e9 in the previous window weigh 10 until 1 µs before its end.
			Steps: []Step{
				{Args: swc(10, sec, 0), Want: R(false, 0, 1000, 1000), TTL: []int64{2000}},
				// Its window's 1 weighs 1 in the next one, where 9 fit. A
				// settle keeps the key Grace longer: at is a caller's clock.
				{At: 500 * ms, Args: swc(10, sec, 1, "charge", Held(0)), Want: R(true, 0, 500, 1500), TTL: []int64{Grace + 1500}},
			},
		},
	)

	// swl is an admit, or with a word and the reservation's instant a
	// settle, of sliding_window_log.
	swl := func(limit int, window time.Duration, cost int, settle ...any) []string {
		return Args(append([]any{limit, window, cost}, settle...)...)
	}
	register(Spec{Script: "sliding_window_log", CostArg: 2, NowArg: 3},
		Scenario{
			Name:        "sliding window log: a refund removes members at at or later, the earliest first, never earlier ones",
			Keys:        []string{"settle:{swl-a}"},
			CallerClock: true,
			Steps: []Step{
				{At: 100 * ms, Args: swl(5, sec, 3), Want: R(true, 2, 0, 1000), TTL: []int64{Grace + 1000}},
				{At: 200 * ms, Args: swl(5, sec, 2), Want: R(true, 0, 0, 1000), TTL: []int64{Grace + 1000}},
				{At: 300 * ms, Args: swl(5, sec, 2, "refund", Held(100*ms)), Want: R(true, 2, 0, 900), TTL: []int64{Grace + 900}},
				// No member at 150 ms: the two at 200 ms are the earliest
				// after it and come back, of 5 asked; the one at 100 ms
				// stays, the newest now.
				{At: 300 * ms, Args: swl(5, sec, 5, "refund", Held(150*ms)), Want: R(true, 4, 0, 800), TTL: []int64{Grace + 800}},
				// Nothing at 200 ms or later: nothing comes back.
				{At: 300 * ms, Args: swl(5, sec, 5, "refund", Held(200*ms)), Want: R(false, 4, 0, 800), TTL: []int64{Grace + 800}},
				// The one left at 100 ms is numbered 1: an admit there
				// numbers on from it.
				{At: 100 * ms, Args: swl(5, sec, 2), Want: R(true, 2, 0, 1000), TTL: []int64{Grace + 800}},
				{At: 300 * ms, Args: swl(5, sec, 3, "refund", Held(100*ms)), Want: R(true, 5, 0, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name:        "sliding window log: a reservation judged later than at (behind another caller's newest member) is refunded",
			Keys:        []string{"settle:{swl-f}"},
			CallerClock: true,
			Steps: []Step{
				// A caller with a clock ahead logs one at 300 ms.
				{At: 300 * ms, Args: swl(5, sec, 1), Want: R(true, 4, 0, 1000), TTL: []int64{Grace + 1000}},
				// A reservation at 200 ms is judged, and logged, at 300 ms.
				{At: 200 * ms, Args: swl(5, sec, 2), Want: R(true, 2, 0, 1100), TTL: []int64{Grace + 1000}},
				// Its refund at 200 ms finds the three at 300 ms and takes
				// two, the highest numbers: 1 is left, numbered 1.
				{At: 200 * ms, Args: swl(5, sec, 2, "refund", Held(200*ms)), Want: R(true, 4, 0, 1100), TTL: []int64{Grace + 1000}},
				{At: 300 * ms, Args: swl(5, sec, 1, "refund", Held(300*ms)), Want: R(true, 5, 0, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			// A reservation counted at 100 ms, then a reset (its members
			// gone), then others log two at 300 ms: the refund takes up to
			// its cost of those, as GCRA's and the buckets' refunds give up
			// to their cost to the state written after a reset.
			Name:        "sliding window log: after a reset, a refund takes up to its cost of the members at or after at",
			Keys:        []string{"settle:{swl-g}"},
			CallerClock: true,
			Steps: []Step{
				{At: 300 * ms, Args: swl(5, sec, 2), Want: R(true, 3, 0, 1000), TTL: []int64{Grace + 1000}},
				{At: 300 * ms, Args: swl(5, sec, 3, "refund", Held(100*ms)), Want: R(true, 5, 0, 0), TTL: []int64{NoKey}},
			},
		},
		Scenario{
			Name:        "sliding window log: a refund once at has left the window gives nothing",
			Keys:        []string{"settle:{swl-b}"},
			CallerClock: true,
			Steps: []Step{
				{At: 100 * ms, Args: swl(5, sec, 3), Want: R(true, 2, 0, 1000), TTL: []int64{Grace + 1000}},
				{At: 1100 * ms, Args: swl(5, sec, 1, "refund", Held(100*ms)), Want: R(false, 5, 0, 0), TTL: []int64{Grace}},
			},
		},
		Scenario{
			Name:        "sliding window log: a charge logs at at, into debt, or now once at has left; never past 10000 members",
			Keys:        []string{"settle:{swl-c}"},
			CallerClock: true,
			Steps: []Step{
				{At: 0, Args: swl(5, sec, 4), Want: R(true, 1, 0, 1000), TTL: []int64{Grace + 1000}},
				// 7 at 0: one more fits when they leave, at 1 s.
				{At: 500 * ms, Args: swl(5, sec, 3, "charge", Held(0)), Want: R(true, 0, 500, 500), TTL: []int64{Grace + 500}},
				{At: 999 * ms, Args: swl(5, sec, 1), Want: R(false, 0, 1, 1), TTL: []int64{Grace + 1}},
				// 0 has left: the charge logs at 1.5 s.
				{At: 1500 * ms, Args: swl(5, sec, 2, "charge", Held(0)), Want: R(true, 3, 0, 1000), TTL: []int64{Grace + 1000}},
				{At: 1500 * ms, Args: swl(5, sec, 9999, "charge", Held(1500*ms)), Err: "BADARG a charge of 9999 would leave 10001 members", TTL: []int64{Grace + 1000}},
				{At: 1500 * ms, Args: swl(5, sec, 0), Want: R(true, 3, 0, 1000), TTL: []int64{Grace + 1000}},
			},
		},
		Scenario{
			Name:        "sliding window log: refund and charge on a key with no state",
			Keys:        []string{"settle:{swl-d}"},
			CallerClock: true,
			Steps: []Step{
				{At: 0, Args: swl(5, sec, 3, "refund", Held(0)), Want: R(false, 5, 0, 0), TTL: []int64{NoKey}},
				{At: 0, Args: swl(5, sec, 0, "charge", Held(0)), Want: R(false, 5, 0, 0), TTL: []int64{NoKey}},
				{At: 0, Args: swl(5, sec, 2, "charge", Held(0)), Want: R(true, 3, 0, 1000), TTL: []int64{Grace + 1000}},
			},
		},
		Scenario{
			Name:        "sliding window log: bad words, an instant past TIME, and members out of order are errors",
			Keys:        []string{"settle:{swl-e}"},
			CallerClock: true,
			// One member at 100 ms numbered 2, not 1: a refund cannot tell
			// which to remove.
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "settle:{swl-e}", Type: "zset", Vals: []string{fmt.Sprint(t0 + 100000), LogMember(t0+100000, 2)}, TTL: 60000}}
			},
			Steps: []Step{
				{Args: swl(5, sec, 1, "charges", Held(100*ms)), Err: "BADARG settle's take must be 'refund' or 'charge'"},
				{Args: swl(5, sec, 1, "refund", Held(61*sec)), Err: "BADARG at must be at most"},
				{Args: swl(5, sec, 1, "refund", Held(100*ms)), Err: "BADSTATE", TTL: []int64{60000}},
			},
		},
	)
}
