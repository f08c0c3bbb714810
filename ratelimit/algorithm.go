package ratelimit

import "fmt"

// An Algorithm is one of the bundled scripts in ../lua. The zero value is
// GCRA. How each one reads a Limit:
//
//   - GCRA, TokenBucket, TokenBucketInterval and LeakyBucket are rate
//     algorithms: Burst requests may pass at once, and capacity comes back
//     at Rate per Period. GCRA and LeakyBucket pace in whole microseconds,
//     so they refuse a Rate above one per microsecond of Period.
//   - FixedWindow, SlidingWindowLog and SlidingWindowCounter are window
//     algorithms: they admit Rate requests per window of length Period, all
//     of them at once if they come at once, so Burst must equal Rate (a
//     different burst would mean nothing). SlidingWindowLog keeps one entry
//     per admitted request, so it takes a Rate of at most 10 000.
type Algorithm int

const (
	// GCRA is the generic cell rate algorithm (gcra.lua), as in redis-cell
	// and go-redis/redis_rate: one integer of state per key, a burst, then
	// smooth pacing. The default.
	GCRA Algorithm = iota
	// TokenBucket (token_bucket.lua, refill "smooth") credits whole tokens
	// as time passes.
	TokenBucket
	// TokenBucketInterval (token_bucket.lua, refill "interval") adds Rate
	// tokens at once each time a whole Period has passed since the key's
	// first request.
	TokenBucketInterval
	// LeakyBucket (leaky_bucket.lua) is the policing leaky bucket: it denies
	// at once and never queues.
	LeakyBucket
	// FixedWindow (fixed_window.lua) counts per window aligned to the Unix
	// epoch; up to twice the limit can pass around a window boundary.
	FixedWindow
	// SlidingWindowLog (sliding_window_log.lua) is an exact rolling window.
	SlidingWindowLog
	// SlidingWindowCounter (sliding_window_counter.lua) approximates a
	// rolling window in O(1) from two window counts.
	SlidingWindowCounter
)

// Algorithms lists every algorithm, GCRA first.
func Algorithms() []Algorithm {
	return []Algorithm{GCRA, TokenBucket, TokenBucketInterval, LeakyBucket, FixedWindow, SlidingWindowLog, SlidingWindowCounter}
}

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
