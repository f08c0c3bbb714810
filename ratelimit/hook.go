package ratelimit

// The hook stage, the first of a decision's path and the last to see it:
// it times the decision and tells the limiter's hooks (WithHook).

import (
	"context"
	"time"
)

// An Event is one decision of a limiter, as its hooks see it (WithHook).
// Atomic's and All's decisions are one Event per limiter, with its part.
// Decision.Source says who decided; Name and Decision.Limit say which
// rule: a Select's plans are WithLimit copies, one name, told apart by
// their limits.
type Event struct {
	Name     string // the limiter's name
	Key      string // the caller's key, before escaping
	Cost     int64  // 0 for Peek (httplimit.WithCountIf: a Peek, then the count)
	Decision Decision
	Err      error         // what the call returned, if it failed
	Duration time.Duration // how long the decision took, round trip included
}

// hooked is the hook stage; with no hook it costs one length check.
type hooked struct {
	fns      []func(context.Context, Event) // WithHook's, in order
	validate validate
}

func (h *hooked) decide(ctx context.Context, a ask) (Decision, error) {
	if len(h.fns) == 0 {
		return h.validate.decide(ctx, a)
	}
	start := time.Now()
	d, err := h.validate.decide(ctx, a)
	h.tell(ctx, a, d, err, start)
	return d, err
}

// tell gives each hook, in order, the Event of a decision that began at
// start.
func (h *hooked) tell(ctx context.Context, a ask, d Decision, err error, start time.Time) {
	if len(h.fns) == 0 {
		return
	}
	e := Event{Name: a.name, Key: a.key, Cost: a.cost, Decision: d, Err: err, Duration: time.Since(start)}
	for _, fn := range h.fns {
		fn(ctx, e)
	}
}
