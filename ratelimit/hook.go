package ratelimit

import "time"

// An Event is one decision of a limiter, as its hook sees it (WithHook). A
// Multi's decision is one Event per limiter, with that limiter's part.
type Event struct {
	Name     string // the limiter's name
	Key      string // the caller's key, before escaping
	Cost     int64  // 0 for Peek
	Decision Decision
	Err      error         // what the call returned, if it failed
	Duration time.Duration // how long the decision took, round trip included
}
