package ratelimit

import "fmt"

// An Algorithm is one of the bundled scripts; the zero value is GCRA. The
// rate algorithms (GCRA to LeakyBucket) pass Burst at once and refill Rate
// per Period; the window algorithms (FixedWindow to SlidingWindowCounter)
// pass Rate per window of Period, so their Burst must equal Rate. The
// constants run from GCRA to SlidingWindowCounter.
type Algorithm int

const (
	// GCRA (gcra.lua), as in redis-cell and redis_rate: one integer of
	// state per key, a burst, then smooth pacing.
	GCRA Algorithm = iota
	// TokenBucket (token_bucket.lua) credits whole tokens as time passes.
	TokenBucket
	// TokenBucketInterval (token_bucket.lua) adds Rate tokens at once each
	// whole Period after the key's first request.
	TokenBucketInterval
	// LeakyBucket (leaky_bucket.lua) polices: it denies at once, never
	// queues.
	LeakyBucket
	// FixedWindow (fixed_window.lua) counts per window aligned to the Unix
	// epoch; up to twice the limit can pass around a boundary.
	FixedWindow
	// SlidingWindowLog (sliding_window_log.lua) is an exact rolling window
	// of at most 10 000 requests.
	SlidingWindowLog
	// SlidingWindowCounter (sliding_window_counter.lua) estimates a rolling
	// window in O(1) from two window counts.
	SlidingWindowCounter
)

var algorithmNames = [...]string{
	GCRA:                 "gcra",
	TokenBucket:          "token_bucket",
	TokenBucketInterval:  "token_bucket_interval",
	LeakyBucket:          "leaky_bucket",
	FixedWindow:          "fixed_window",
	SlidingWindowLog:     "sliding_window_log",
	SlidingWindowCounter: "sliding_window_counter",
}

// String is the algorithm's name, such as "gcra" or
// "token_bucket_interval".
func (a Algorithm) String() string {
	if a.valid() {
		return algorithmNames[a]
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// windowed reports whether a counts requests per window (Burst = Rate).
func (a Algorithm) windowed() bool {
	return a == FixedWindow || a == SlidingWindowLog || a == SlidingWindowCounter
}

func (a Algorithm) valid() bool { return a >= 0 && int(a) < len(algorithmNames) }
