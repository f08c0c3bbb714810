package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Wait is WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) error { return l.WaitN(ctx, key, 1) }

// WaitN blocks until n requests for key pass, and counts them, as
// x/time/rate's WaitN does. It returns at once, counting nothing, with an
// error matching context.DeadlineExceeded when the wait would pass ctx's
// deadline, with ErrInvalid when n can never pass (above the Burst), and
// with the error of a decision that fails (or its Cause, when the limiter
// fails closed). Each wait is the denial's RetryAfter plus a random jitter,
// up to an eighth of the wait (or of the limit's interval, Period/Rate, if
// shorter) and doubling with each denial up to four intervals, so that
// waiters woken together do not all ask Redis at once. Every admission is
// Redis's, so any number of waiters on one key never pass more than the
// limit.
func (l *Limiter) WaitN(ctx context.Context, key string, n int64) error {
	interval := l.limit.Period / time.Duration(l.limit.Rate)
	for attempt := 0; ; attempt++ {
		d, err := l.AllowN(ctx, key, n)
		switch {
		case err != nil:
			return err
		case d.Allowed:
			return nil
		case d.RetryAfter == Never:
			return fmt.Errorf("%w: WaitN(n=%d) exceeds limiter %q's burst %d: it can never pass", ErrInvalid, n, l.name, d.Limit.Burst)
		case d.Cause != nil && d.RetryAfter <= 0:
			return fmt.Errorf("ratelimit: %q fails closed: %w", l.name, d.Cause)
		}
		wait := d.RetryAfter
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return fmt.Errorf("ratelimit: WaitN(n=%d) would wait %v, past the context's deadline: %w", n, wait, context.DeadlineExceeded)
		}
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
	}
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
