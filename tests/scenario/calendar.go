package scenario

import "time"

// fixedWindowSpec is fixed_window's: cost is ARGV[3] and the clock ARGV[4],
// so a step's Args may go on past the cost with the form (take, at,
// period_start, period_end, next_end), which follows the deadline.
var fixedWindowSpec = Spec{Script: "fixed_window", CostArg: 2, NowArg: 3}

// fixed_window.lua's calendar form (window 0, then periods whose
// boundaries the caller gives) and its settle (take refund, take charge).
// The periods' boundaries are instants from T0 (Ms), so the tables that
// span less than a minute run on real servers too: a day of 23 hours is
// nothing but its boundaries to the script; ratelimit works them out from
// a time zone (its tests hold the DST days).
func init() {
	sec, ms, h, day := time.Second, time.Millisecond, time.Hour, 24*time.Hour
	// cal is a calendar call: the limit, the cost, the take, at (0 or an
	// instant from T0) and the periods [b0, b1), [b1, b2) from T0.
	cal := func(limit, cost int, take string, at any, b0, b1, b2 time.Duration) []string {
		a := "0"
		if d, ok := at.(time.Duration); ok {
			a = Us(d)
		}
		return append(Args(limit, 0, cost), take, a, Ms(b0), Ms(b1), Ms(b2))
	}
	// all is a take all in the periods of a day of 23 hours ending 10 s
	// after T0, then one of 25 hours.
	all := func(limit, cost int) []string { return cal(limit, cost, "all", 0, 10*sec-23*h, 10*sec, 10*sec+25*h) }
	// epoch is a call in epoch windows with the form: the take, at from
	// T0, and no periods.
	epoch := func(limit int, window time.Duration, cost int, take string, at time.Duration) []string {
		return append(Args(limit, window, cost), take, Us(at), "0", "0", "0")
	}
	// U is a settle's reply: whether a unit moved, then a peek's.
	U := func(moved bool, remaining, retryMs, resetMs int64) []int64 {
		return R(moved, remaining, retryMs, resetMs)
	}
	fw := func(limit int, window time.Duration, cost int) []string { return Args(limit, window, cost) }
	long := (25 * h).Milliseconds()
	register(fixedWindowSpec,
		Scenario{
			Name: "calendar: a day of 23 hours ends at its boundary, the next of 25 counts from 0",
			Keys: []string{"cal:{a}"},
			Steps: []Step{
				{At: 0, Args: all(3, 2), Want: R(true, 1, 0, 10000), TTL: []int64{10000}},
				{At: 0, Args: all(3, 2), Want: R(false, 1, 10000, 10000), TTL: []int64{10000}},
				{At: 9500 * ms, Args: all(3, 1), Want: R(true, 0, 0, 500), TTL: []int64{500}},
				{At: 9999 * ms, Args: all(3, 0), Want: R(false, 0, 1, 1), TTL: []int64{1}},
				// The boundary: the key is gone, a peek creates nothing.
				{At: 10 * sec, Args: all(3, 0), Want: R(true, 3, 0, 0), TTL: []int64{NoKey}},
				{At: 10 * sec, Args: all(3, 3), Want: R(true, 0, 0, long), TTL: []int64{long}},
				{At: 11 * sec, Args: all(3, 1), Want: R(false, 0, long-1000, long-1000), TTL: []int64{long - 1000}},
				// A cost above the limit can never pass.
				{At: 11 * sec, Args: all(3, 4), Want: R(false, 0, -1, long-1000), TTL: []int64{long - 1000}},
			},
		},
		Scenario{
			Name: "calendar: a count of an earlier period is not carried in",
			Keys: []string{"cal:{b}"},
			Preset: func(t0 int64) []Preset {
				// Counted a day before T0, before period_start.
				return []Preset{{Key: "cal:{b}", Type: "string", Vals: []string{FixedWindowState(t0/1000-int64(day/ms), 3)}, TTL: 30000}}
			},
			Steps: []Step{
				{At: 0, Args: all(3, 0), Want: R(true, 3, 0, 0), TTL: []int64{30000}},
				{At: 0, Args: all(3, 3), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
			},
		},
		Scenario{
			Name: "calendar: a count an epoch window wrote counts in the period that holds it",
			Keys: []string{"cal:{c}"},
			Preset: func(t0 int64) []Preset {
				return []Preset{{Key: "cal:{c}", Type: "string", Vals: []string{FixedWindowState(t0/1000, 2)}, TTL: 30000}}
			},
			Steps: []Step{
				{At: 0, Args: all(3, 0), Want: R(true, 1, 0, 10000), TTL: []int64{30000}},
				{At: 0, Args: all(3, 1), Want: R(true, 0, 0, 10000), TTL: []int64{10000}},
			},
		},
		Scenario{
			Name:        "calendar with a caller clock: a call stamped before the boundary counts before it, a late one where the newest call's count is",
			Keys:        []string{"cal:{d}"},
			CallerClock: true,
			Steps: []Step{
				{At: 9 * sec, Args: all(3, 1), Want: R(true, 2, 0, 1000), TTL: []int64{Grace + 1000}},
				{At: 10 * sec, Args: all(3, 1), Want: R(true, 2, 0, long), TTL: []int64{Grace + long}},
				// Stamped 100 ms before the boundary, after the newest call:
				// counted in its period (the server's clock stays at 10 s).
				{At: 9900 * ms, Args: all(3, 1), Want: R(true, 1, 0, long+100), TTL: []int64{Grace + long}},
				{At: 9900 * ms, Args: all(3, 2), Want: R(false, 1, long+100, long+100), TTL: []int64{Grace + long}},
			},
		},
		Scenario{
			Name: "calendar: a month of 31 days, then one of 28; the key lives to the month's end",
			Keys: []string{"cal:{m}"},
			// T0 is 2026-01-01T00:00Z: January, then February.
			Steps: []Step{
				{At: 31*day - sec, Args: cal(10000, 10000, "all", 0, 0, 31*day, 59*day), Want: R(true, 0, 0, 1000), TTL: []int64{1000}},
				{At: 31*day - ms, Args: cal(10000, 1, "all", 0, 0, 31*day, 59*day), Want: R(false, 0, 1, 1), TTL: []int64{1}},
				{At: 31 * day, Args: cal(10000, 1, "all", 0, 0, 31*day, 59*day), Want: R(true, 9999, 0, (28 * day).Milliseconds()), TTL: []int64{(28 * day).Milliseconds()}},
				// The next call names February and March.
				{At: 32 * day, Args: cal(10000, 1, "all", 0, 31*day, 59*day, 90*day), Want: R(true, 9998, 0, (27 * day).Milliseconds()), TTL: []int64{(27 * day).Milliseconds()}},
			},
		},
		Scenario{
			Name:    "calendar: bad periods, takes and instants are BADARG and change nothing",
			Keys:    []string{"cal:{e}"},
			Strings: nil,
			Steps: []Step{
				{At: 0, Args: all(3, 1), Want: R(true, 2, 0, 10000), TTL: []int64{10000}},
				// The instant before period_start, or at next_end.
				{At: 0, Args: cal(3, 1, "all", 0, sec, 2*sec, 25*h), Err: "BADARG the instant", TTL: []int64{10000}},
				{At: 0, Args: cal(3, 1, "all", 0, -2*day, -day, 0), Err: "BADARG the instant", TTL: []int64{10000}},
				// next_end within 60 s of TIME.
				{At: 0, Args: cal(3, 1, "all", 0, -23*h, 10*sec, 20*sec), Err: "BADARG next_end", TTL: []int64{10000}},
				// Not increasing.
				{At: 0, Args: cal(3, 1, "all", 0, -h, -h, 25*h), Err: "BADARG period_start", TTL: []int64{10000}},
				{At: 0, Args: cal(3, 1, "all", 0, -h, 25*h, 24*h), Err: "BADARG period_start", TTL: []int64{10000}},
				{At: 0, Args: append(Args(3, 0, 1), "all", "0", Ms(-h), "0", Ms(25*h)), Err: "BADARG period_start", TTL: []int64{10000}},
				// A window with periods, and window 0 without.
				{At: 0, Args: append(Args(3, 1000, 1), all(3, 1)[3:]...), Err: "BADARG window", TTL: []int64{10000}},
				{At: 0, Args: fw(3, 0, 1), Err: "BADARG window", TTL: []int64{10000}},
				{At: 0, Args: append(Args(3, 0, 1), "all", "0", "0", "0", "0"), Err: "BADARG window", TTL: []int64{10000}},
				// Takes and their at.
				{At: 0, Args: cal(3, 1, "ALL", 0, 10*sec-23*h, 10*sec, 10*sec+25*h), Err: "BADARG take", TTL: []int64{10000}},
				{At: 0, Args: cal(3, 1, "all", sec, 10*sec-23*h, 10*sec, 10*sec+25*h), Err: "BADARG at", TTL: []int64{10000}},
				{At: 0, Args: cal(3, 1, "refund", 0, 10*sec-23*h, 10*sec, 10*sec+25*h), Err: "BADARG at", TTL: []int64{10000}},
				{At: 0, Args: cal(3, 1, "charge", 2*time.Minute, 10*sec-23*h, 10*sec, 10*sec+25*h), Err: "BADARG at", TTL: []int64{10000}},
				// Neither 5 arguments nor 10.
				{At: 0, Args: append(Args(3, 1000, 1), "all"), Err: "BADARG takes 1 key(s) and 5 arguments", TTL: []int64{10000}},
				{At: 0, Args: append(Args(3, 1000, 1), "all", "0", "0", "0"), Err: "BADARG takes 1 key(s) and 5 arguments", TTL: []int64{10000}},
				{At: 0, Args: append(all(3, 1), "0"), Err: "BADARG takes 1 key(s) and 10 arguments", TTL: []int64{10000}},
				{At: 0, Args: all(3, 1), Want: R(true, 1, 0, 10000), TTL: []int64{10000}},
			},
		},
		Scenario{
			Name:        "settle in epoch windows: a refund gives back the window's count, never below 0, nothing after a roll; a charge counts past the limit",
			Keys:        []string{"fws:{a}"},
			CallerClock: true,
			Steps: []Step{
				{At: sec, Args: fw(5, 10*sec, 3), Want: R(true, 2, 0, 9000), TTL: []int64{Grace + 9000}},
				// A refund keeps the key's TTL.
				{At: 2 * sec, Args: epoch(5, 10*sec, 2, "refund", sec), Want: U(true, 4, 0, 8000), TTL: []int64{Grace + 8000}},
				// Down to 0, not below: the key is deleted.
				{At: 2 * sec, Args: epoch(5, 10*sec, 5, "refund", sec), Want: U(true, 5, 0, 0), TTL: []int64{NoKey}},
				{At: 2 * sec, Args: epoch(5, 10*sec, 1, "refund", sec), Want: U(false, 5, 0, 0), TTL: []int64{NoKey}},
				// A cost of 0 moves nothing, writes nothing.
				{At: 2 * sec, Args: epoch(5, 10*sec, 0, "charge", sec), Want: U(false, 5, 0, 0), TTL: []int64{NoKey}},
				{At: 3 * sec, Args: fw(5, 10*sec, 4), Want: R(true, 1, 0, 7000), TTL: []int64{Grace + 7000}},
				// Past the limit: the window is denied until it ends.
				{At: 3 * sec, Args: epoch(5, 10*sec, 3, "charge", 3*sec), Want: U(true, 0, 7000, 7000), TTL: []int64{Grace + 7000}},
				{At: 4 * sec, Args: fw(5, 10*sec, 1), Want: R(false, 0, 6000, 6000), TTL: []int64{Grace + 6000}},
				// The window ended: neither moves anything.
				{At: 11 * sec, Args: epoch(5, 10*sec, 7, "refund", 3*sec), Want: U(false, 5, 0, 0), TTL: []int64{Grace - 1000}},
				{At: 11 * sec, Args: epoch(5, 10*sec, 2, "charge", 3*sec), Want: U(false, 5, 0, 0), TTL: []int64{Grace - 1000}},
				{At: 11 * sec, Args: fw(5, 10*sec, 2), Want: R(true, 3, 0, 9000), TTL: []int64{Grace + 9000}},
				// A reservation of the ended window gets nothing from this one.
				{At: 12 * sec, Args: epoch(5, 10*sec, 2, "refund", 9500*ms), Want: U(false, 3, 0, 8000), TTL: []int64{Grace + 8000}},
				{At: 12 * sec, Args: epoch(5, 10*sec, 1, "refund", 11*sec), Want: U(true, 4, 0, 8000), TTL: []int64{Grace + 8000}},
				// A charge on a key with no state counts from at's window.
				{At: 20 * sec, Args: epoch(5, 10*sec, 2, "charge", 20*sec), Want: U(true, 3, 0, 10000), TTL: []int64{Grace + 10000}},
			},
		},
		Scenario{
			Name:        "settle in calendar periods: a charge past the limit, a refund after the boundary gives nothing, one where a later period's count is gives nothing",
			Keys:        []string{"fws:{b}"},
			CallerClock: true,
			Steps: []Step{
				{At: 5 * sec, Args: all(4, 2), Want: R(true, 2, 0, 5000), TTL: []int64{Grace + 5000}},
				{At: 8 * sec, Args: cal(4, 3, "charge", 5*sec, 10*sec-23*h, 10*sec, 10*sec+25*h), Want: U(true, 0, 2000, 2000), TTL: []int64{Grace + 2000}},
				{At: 9 * sec, Args: all(4, 1), Want: R(false, 0, 1000, 1000), TTL: []int64{Grace + 1000}},
				{At: 10 * sec, Args: all(4, 1), Want: R(true, 3, 0, long), TTL: []int64{Grace + long}},
				// Reserved before the boundary: that period ended.
				{At: 11 * sec, Args: cal(4, 2, "refund", 5*sec, 10*sec-23*h, 10*sec, 10*sec+25*h), Want: U(false, 3, 0, long-1000), TTL: []int64{Grace + long - 1000}},
				{At: 11 * sec, Args: cal(4, 5, "refund", 10*sec, 10*sec-23*h, 10*sec, 10*sec+25*h), Want: U(true, 4, 0, 0), TTL: []int64{NoKey}},
				{At: 12 * sec, Args: all(4, 1), Want: R(true, 3, 0, long-2000), TTL: []int64{Grace + long - 2000}},
				// A clock 50 ms before the boundary, at's period holding it:
				// the stored count is the next period's, so a refund gives
				// nothing, and a charge counts there.
				{At: 9950 * ms, Args: cal(4, 1, "refund", 9900*ms, 10*sec-23*h, 10*sec, 10*sec+25*h), Want: U(false, 3, 0, long+50), TTL: []int64{Grace + long - 2000}},
				{At: 9950 * ms, Args: cal(4, 1, "charge", 9900*ms, 10*sec-23*h, 10*sec, 10*sec+25*h), Want: U(true, 2, 0, long+50), TTL: []int64{Grace + long - 2000}},
			},
		},
		Scenario{
			Name: "settle with the server's clock and a deadline: EXPIRED changes nothing",
			Keys: []string{"fws:{c}"},
			Steps: []Step{
				{At: 0, Args: fw(5, 10*sec, 3), Want: R(true, 2, 0, 10000), TTL: []int64{10000}},
				{At: 0, Args: epoch(5, 10*sec, 3, "refund", 0), DeadlineIn: -sec, Err: "EXPIRED", TTL: []int64{10000}},
				{At: sec, Args: epoch(5, 10*sec, 1, "refund", 0), Want: U(true, 3, 0, 9000), TTL: []int64{9000}},
				{At: sec, Args: epoch(5, 10*sec, 3, "charge", 0), Want: U(true, 0, 9000, 9000), TTL: []int64{9000}},
			},
		},
	)
}
