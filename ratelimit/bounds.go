package ratelimit

import (
	"fmt"
	"math/bits"
)

// The scripts' own bounds.
const (
	maxCount  = 1e9  // rate, burst, capacity, limit and cost
	maxPeriod = 1e11 // ms
	maxSpan   = 1e15 // µs a full bucket or TAT may reach
)

// A limitError says why a Limit was refused. It matches ErrInvalid.
type limitError struct {
	Algorithm Algorithm
	Limit     Limit
	Field     string // "Rate", "Period", "Burst", or "" for a combination
	Reason    string
}

func (e *limitError) Error() string {
	field := ""
	if e.Field != "" {
		field = e.Field + " "
	}
	return fmt.Sprintf("%v: %s limit {%s}: %s%s", ErrInvalid, e.Algorithm, e.Limit.format(), field, e.Reason)
}

func (e *limitError) Is(target error) bool { return target == ErrInvalid }

// paced is GCRA's and the leaky bucket's bound: one unit lasts period/rate
// rounded up to a whole µs, and a full burst of units stays within 1e15 µs.
func paced(l Limit) *limitError {
	periodUs := l.Period.Microseconds()
	if l.Rate > periodUs {
		return &limitError{Field: "Rate", Reason: "must be at most one per µs of Period (use TokenBucket for more)"}
	}
	unit := (periodUs + l.Rate - 1) / l.Rate
	if !mulAtMost(uint64(l.Burst), uint64(unit), maxSpan, 1) {
		return &limitError{Reason: "Burst × Period / Rate must be at most 1e15 µs (31 years)"}
	}
	return nil
}

// smoothFill bounds the time a token bucket takes to fill: Burst×Period/Rate.
func smoothFill(l Limit) *limitError {
	if !mulAtMost(uint64(l.Burst), uint64(l.Period.Microseconds()), maxSpan, uint64(l.Rate)) {
		return &limitError{Reason: "Burst × Period / Rate must be at most 1e15 µs (31 years)"}
	}
	return nil
}

// intervalFill bounds the same for whole periods: ⌈Burst/Rate⌉×Period.
func intervalFill(l Limit) *limitError {
	steps := (l.Burst + l.Rate - 1) / l.Rate
	if !mulAtMost(uint64(steps), uint64(l.Period.Microseconds()), maxSpan, 1) {
		return &limitError{Reason: "⌈Burst / Rate⌉ × Period must be at most 1e15 µs (31 years)"}
	}
	return nil
}

// window is the window algorithms' check: they admit Rate per window, so a
// Burst other than Rate means nothing, and maxRate caps the log's size.
func window(maxRate int64) func(Limit) *limitError {
	return func(l Limit) *limitError {
		if l.Burst != l.Rate {
			return &limitError{Field: "Burst", Reason: "must equal Rate: a window algorithm admits Rate per Period, all at once if they come at once"}
		}
		if l.Rate > maxRate {
			return &limitError{Field: "Rate", Reason: "must be at most 10000 for the sliding log, which keeps one entry per request (use SlidingWindowCounter)"}
		}
		return nil
	}
}

// mulAtMost reports a×b ≤ c×d without overflow.
func mulAtMost(a, b, c, d uint64) bool {
	h1, l1 := bits.Mul64(a, b)
	h2, l2 := bits.Mul64(c, d)
	return h1 < h2 || h1 == h2 && l1 <= l2
}
