package ratelimit

import (
	"fmt"
	"math"
	"time"
)

// Never is the RetryAfter of a request that can never pass: it costs more
// than the limit lets through at once. Waiting does not help, so there is
// no wait to report (the scripts answer -1 ms; this layer never does).
const Never time.Duration = math.MaxInt64

// A Decision is a limiter's answer for one key, the same for every
// algorithm.
type Decision struct {
	// Allowed reports whether the request passes. Allow and AllowN count
	// it when it does; a denied request changes nothing.
	Allowed bool
	// Limit is the most that can ever pass at once: the Limit's Burst
	// (which is its Rate for the window algorithms).
	Limit int64
	// Remaining is how many more requests of cost 1 would pass right now,
	// never negative.
	Remaining int64
	// RetryAfter is 0 when the request passes. When it is denied, it is the
	// wait after which the same request would pass if nothing else came,
	// never shorter than the real wait; or Never when it can never pass.
	RetryAfter time.Duration
	// ResetAfter is how long until the limiter is back to full (Remaining
	// equal to Limit) if nothing else comes.
	ResetAfter time.Duration
	// Fallback is NoFallback when Redis decided. It is FailOpen or
	// FailClosed when Redis failed or did not answer in time and the
	// limiter's failure policy decided instead; Allowed then says which
	// way, Cause says why, Limit is set and the other fields are zero.
	Fallback Fallback
	// Cause is the error a failure policy decided in spite of; nil when
	// Redis decided.
	Cause error
	// Cached reports a denial the limiter's deny cache made without asking
	// Redis (WithDenyCache): Allowed is false and RetryAfter counts down to
	// the end of a denial Redis made earlier, so it is never shorter than
	// the real wait; Remaining and ResetAfter are from that denial (the
	// latter counting down), estimates of what Redis would answer now.
	Cached bool
}

// decision turns a script's reply into a Decision.
func decision(r reply, limit int64) Decision {
	d := Decision{
		Allowed:    r.Allowed,
		Limit:      limit,
		Remaining:  r.Remaining,
		RetryAfter: r.RetryAfter,
		ResetAfter: r.ResetAfter,
	}
	if d.RetryAfter < 0 {
		d.RetryAfter = Never
	}
	return d
}

// String reads like "allowed, 2 of 3 left, full in 667ms", "denied, 0 of 3
// left, retry in 333ms, full in 1s", "denied, can never pass", "denied by
// the deny cache, ..." or "allowed by fail-open (cause)".
func (d Decision) String() string {
	verdict := "denied"
	if d.Allowed {
		verdict = "allowed"
	}
	if d.Cached {
		verdict += " by the deny cache"
	}
	if d.Fallback != NoFallback {
		return fmt.Sprintf("%s by %v (%v)", verdict, d.Fallback, d.Cause)
	}
	s := fmt.Sprintf("%s, %d of %d left", verdict, d.Remaining, d.Limit)
	switch {
	case d.RetryAfter == Never:
		s += ", can never pass"
	case !d.Allowed:
		s += fmt.Sprintf(", retry in %v", d.RetryAfter)
	}
	return s + fmt.Sprintf(", full in %v", d.ResetAfter)
}
