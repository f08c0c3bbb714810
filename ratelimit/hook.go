package ratelimit

import "time"

// An Event is one decision of a limiter, as its hook sees it (WithHook).
// Atomic's and All's decisions are one Event per limiter, with its part.
type Event struct {
	Name     string // the limiter's name
	Key      string // the caller's key, before escaping
	Cost     int64  // 0 for Peek (httplimit.WithCountIf: a Peek, then the count)
	Decision Decision
	Err      error         // what the call returned, if it failed
	Duration time.Duration // how long the decision took, round trip included
}
