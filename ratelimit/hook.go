package ratelimit

// The hook stage, the first of a decision's path and the last to see it:
// it times the decision and tells the limiter's hook (WithHook).

import (
	"context"
	"time"
)

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

// hooked is the hook stage; with no hook it costs one nil check.
type hooked struct {
	fn       func(context.Context, Event) // nil without WithHook
	validate validate
}

func (h *hooked) decide(ctx context.Context, a ask) (Decision, error) {
	if h.fn == nil {
		return h.validate.decide(ctx, a)
	}
	start := time.Now()
	d, err := h.validate.decide(ctx, a)
	h.tell(ctx, a, d, err, start)
	return d, err
}

// tell gives the hook, if any, the Event of a decision that began at
// start.
func (h *hooked) tell(ctx context.Context, a ask, d Decision, err error, start time.Time) {
	if h.fn != nil {
		h.fn(ctx, Event{Name: a.name, Key: a.key, Cost: a.cost, Decision: d, Err: err, Duration: time.Since(start)})
	}
}
