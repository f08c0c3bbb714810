package scenario

import (
	"fmt"
	"regexp"
	"strconv"
)

// The scripts' states, as the headers describe them (see docs/scripts.md):
// every state starts with a tag that names its script, so a test that
// presets a key writes it through these and nowhere else.

// GCRAState is gcra.lua's state (multi.lua's too)
// as the scripts write it: the TAT, the interval it counts in, and the
// TAT's lead on the clock of the write that set it, all in µs. A lead of
// one interval below 1e8 µs takes the short form, 19 digits with the TAT
// modulo 1e10 (GCRAShortState), any other the long one (GCRALongState).
func GCRAState(tat, interval, lead int64) string {
	if lead == interval && interval < 1e8 {
		return GCRAShortState(tat, interval)
	}
	return GCRALongState(tat, interval, lead)
}

// GCRALongState is gcra.lua's long form, 'g<tat><interval>/<more>'.
func GCRALongState(tat, interval, lead int64) string {
	return fmt.Sprintf("g%016d%d/%d", tat, interval, lead-interval)
}

// GCRASettledState is the form only gcra.lua's take refund and take
// charge write, 'g<tat><interval>=<lead>+<debt>': for a lead below one
// interval, or past a full burst by debt (the part of lead the burst of
// the writing limit does not hold).
func GCRASettledState(tat, interval, lead, debt int64) string {
	return fmt.Sprintf("g%016d%d=%d+%d", tat, interval, lead, debt)
}

// GCRAShortState is gcra.lua's short form, '2<tat mod 1e10><interval>', of
// a TAT one interval ahead of its write.
func GCRAShortState(tat, interval int64) string {
	return fmt.Sprintf("2%010d%08d", tat%1e10, interval)
}

// LeakyBucketState is leaky_bucket.lua's state: the time water was last
// poured, the µs per unit, and the µs of water then.
func LeakyBucketState(ts, unit, level int64) string {
	return fmt.Sprintf("l%016d%d/%d", ts, unit, level-unit)
}

// TokenBucketState is token_bucket.lua's state: the instant tokens were
// credited up to (µs) and the tokens then.
func TokenBucketState(ts, tokens int64) string {
	return fmt.Sprintf("-%016d%d", ts, tokens)
}

// FixedWindowState is fixed_window.lua's state: the ms of the newest
// counted call and the count.
func FixedWindowState(tMs, n int64) string {
	return fmt.Sprintf("1%013d%d", tMs, n)
}

// SlidingWindowCounterState is sliding_window_counter.lua's state: the
// start of the current count's window (ms), the ms from it to the newest
// call, and the current and previous counts.
func SlidingWindowCounterState(sMs, dMs, cur, prev int64) string {
	return fmt.Sprintf("c%013d%d/%d/%d", sMs, dMs, cur, prev)
}

// LogMember is a member of sliding_window_log.lua's sorted set: the n-th
// unit admitted at the µs us (its score).
func LogMember(us, n int64) string {
	return fmt.Sprintf("%d:%d", us, n)
}

var (
	gcraLongRE  = regexp.MustCompile(`^g([0-9]{16})([1-9][0-9]*)/(0|[1-9][0-9]*)$`)
	gcraShortRE = regexp.MustCompile(`^2([0-9]{10})([0-9]{8})$`)
	gcraDebtRE  = regexp.MustCompile(`^g([0-9]{16})([1-9][0-9]*)=(0|[1-9][0-9]*)\+(0|[1-9][0-9]*)$`)
)

// ParseGCRA reads gcra.lua's state, in either form, as the scripts read it
// at the server's clock server (µs): the TAT, the interval it counts in and
// the TAT's lead on the clock of the write that set it. The short form's
// TAT is the one from 60 s and a second behind server on, modulo 1e10.
// (The scripts' bounds on the numbers are not checked here.)
func ParseGCRA(state string, server int64) (tat, interval, lead int64, err error) {
	tat, interval, lead, _, err = ParseGCRADebt(state, server)
	return tat, interval, lead, err
}

// ParseGCRADebt is ParseGCRA that also reads the debt of the settled form
// (GCRASettledState), 0 in the other two; lead includes the debt.
func ParseGCRADebt(state string, server int64) (tat, interval, lead, debt int64, err error) {
	if m := gcraDebtRE.FindStringSubmatch(state); m != nil {
		var errs [4]error
		tat, errs[0] = strconv.ParseInt(m[1], 10, 64)
		interval, errs[1] = strconv.ParseInt(m[2], 10, 64)
		lead, errs[2] = strconv.ParseInt(m[3], 10, 64)
		debt, errs[3] = strconv.ParseInt(m[4], 10, 64)
		for _, e := range errs {
			if e != nil {
				return 0, 0, 0, 0, e
			}
		}
		return tat, interval, lead, debt, nil
	}
	if m := gcraShortRE.FindStringSubmatch(state); m != nil {
		mod, _ := strconv.ParseInt(m[1], 10, 64)
		interval, _ = strconv.ParseInt(m[2], 10, 64)
		if interval == 0 {
			return 0, 0, 0, 0, fmt.Errorf("GCRA state %q has an interval of 0", state)
		}
		base := server - Grace*1000 - 1_000_000
		d := (mod - base) % 1e10
		if d < 0 {
			d += 1e10
		}
		return base + d, interval, interval, 0, nil
	}
	m := gcraLongRE.FindStringSubmatch(state)
	if m == nil {
		return 0, 0, 0, 0, fmt.Errorf("GCRA state %q is none of 2<tat><interval>, g<tat><interval>/<more> and g<tat><interval>=<lead>+<debt>", state)
	}
	if tat, err = strconv.ParseInt(m[1], 10, 64); err == nil {
		if interval, err = strconv.ParseInt(m[2], 10, 64); err == nil {
			lead, err = strconv.ParseInt(m[3], 10, 64)
			lead += interval
		}
	}
	return tat, interval, lead, 0, err
}

// LeakyBucketSettledState is leaky_bucket.lua's settled form
// 'l<ts><unit>=<water>+<debt>', which only a refund or a charge writes.
func LeakyBucketSettledState(ts, unit, water, debt int64) string {
	return fmt.Sprintf("l%016d%d=%d+%d", ts, unit, water, debt)
}
