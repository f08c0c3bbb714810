package ratelimit

import (
	"context"
	"time"
)

// A Hook sees every decision of a limiter (WithHook), for logs and metrics.
// It runs on the caller's goroutine, after the decision, so it should be
// quick. A limiter without a hook does no work for it: no clock reads, no
// Event, no allocation.
type Hook func(ctx context.Context, e Event)

// An Event is one decision, as a Hook sees it.
type Event struct {
	Limiter  *Limiter
	Key      string // the caller's key, before escaping
	Cost     int64  // 0 for Peek
	Decision Decision
	Err      error         // what the call returned, if it failed
	Duration time.Duration // how long the decision took, round trip included
}
