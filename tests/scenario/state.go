package scenario

import "fmt"

// The scripts' states, as the headers describe them (see docs/scripts.md):
// every state starts with a tag that names its script, so a test that
// presets a key writes it through these and nowhere else.

// GCRAState is gcra.lua's state (multi.lua's and gcra_at_most.lua's too):
// the TAT, the interval it counts in, and the TAT's lead on the clock of
// the write that set it, all in µs.
func GCRAState(tat, interval, lead int64) string {
	return fmt.Sprintf("g%016d%d/%d", tat, interval, lead-interval)
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
