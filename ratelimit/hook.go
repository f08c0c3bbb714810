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
// their limits. An admission whose answer came after its caller left is
// given back, and told as Source "late-refund", Cost −n, Err nil (or why
// it stays counted), on a goroutine of its own.
type Event struct {
	Name     string // the limiter's name
	Key      string // the caller's key, before escaping
	Cost     int64  // 0 for Peek; −n for a late refund (below)
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

// lateRefund tells the hooks of an admission whose answer came after its
// caller left (late.go): given back when err is nil, counted otherwise. Its
// Event has Cost −n and Source "late-refund", and no Duration.
func (h *hooked) lateRefund(a ask, err error) {
	d := Decision{Name: a.name, Limit: a.limit, Source: sourceLate}
	a.cost = -a.cost
	e := Event{Name: a.name, Key: a.key, Cost: a.cost, Decision: d, Err: err}
	for _, fn := range h.fns {
		fn(context.Background(), e)
	}
}
