package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Wait is WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) error { return l.WaitN(ctx, key, 1) }

// WaitN blocks until n requests for key pass, and counts them. It returns
// at once, counting nothing, with an error matching
// context.DeadlineExceeded when the wait would pass ctx's deadline, with
// ErrInvalid when n is above the Burst, and with the error of a decision
// that fails (or its Cause, when the limiter fails closed).
func (l *Limiter) WaitN(ctx context.Context, key string, n int64) error {
	if l == nil {
		return errNilLimiter
	}
	// A first try outside the queue: most calls pass, and one that must
	// wait past its deadline says so at once.
	wait, err := l.try(ctx, key, n)
	if err != nil || wait == 0 {
		return err
	}
	// The wait runs from the denial, not from the turn: a waiter that
	// queued for longer asks at once.
	due := time.Now().Add(wait)
	release, err := l.waits.enter(ctx, key)
	if err != nil {
		return err
	}
	defer release()
	interval := l.limit.Period / time.Duration(l.limit.Rate)
	for attempt := 0; ; attempt++ {
		wait = max(time.Until(due), 0)
		wait += jitter(wait, interval, attempt)
		if deadline, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(deadline))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if wait, err = l.try(ctx, key, n); err != nil || wait == 0 {
			return err
		}
		due = time.Now().Add(wait)
	}
}

// try asks once: 0 when n passed, else the wait before the next try.
func (l *Limiter) try(ctx context.Context, key string, n int64) (time.Duration, error) {
	d, err := l.AllowN(ctx, key, n)
	switch {
	case err != nil:
		return 0, err
	case d.Allowed:
		return 0, nil
	case d.RetryAfter == Never:
		return 0, fmt.Errorf("%w: WaitN(n=%d) exceeds limiter %q's burst %d: it can never pass", ErrInvalid, n, l.name, d.Limit.Burst)
	case d.Cause != nil && d.RetryAfter <= 0:
		return 0, fmt.Errorf("ratelimit: %q fails closed: %w", l.name, d.Cause)
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < d.RetryAfter {
		return 0, fmt.Errorf("ratelimit: WaitN(n=%d) would wait %v, past the context's deadline: %w", n, d.RetryAfter, context.DeadlineExceeded)
	}
	return d.RetryAfter, nil
}

// jitter is a random extra wait for a waiter's attempt-th denial: up to an
// eighth of min(wait, interval), doubling per attempt, at most 4 intervals.
func jitter(wait, interval time.Duration, attempt int) time.Duration {
	j := min(wait, interval) / 8
	for i := 0; i < attempt && j < 4*interval; i++ {
		j *= 2
	}
	j = min(j, 4*interval)
	if j <= 0 {
		return 0
	}
	return rand.N(j)
}
