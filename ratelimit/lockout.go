package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/key"
)

// WithLockout locks a key out for d once its limit is used up: the request
// that takes the last of it, or one that is denied, starts a lockout during
// which every request for the key is denied, however the limit refills.
// Without WithAlgorithm such a limiter counts with SlidingWindowLog, so Rate
// requests in any Period start it, whatever their pacing. d is a whole
// number of milliseconds, 1 ms to 1e11 ms.
func WithLockout(d time.Duration) Option {
	return func(l *Limiter) error {
		if d < time.Millisecond || d > maxPeriod*time.Millisecond || d%time.Millisecond != 0 {
			return fmt.Errorf("%w: lockout %v, want a whole number of milliseconds from 1ms to 1e11 ms", ErrInvalid, d)
		}
		l.block = d
		return nil
	}
}

// blockKey holds key's lockout: gcra.lua's state for one request per
// lockout, so that taking that one request is starting the lockout. '!' is
// in no name, so no default prefix of another limiter is this one. (The
// key's "!block:" stays as it was: renaming it would forget every lockout
// under way.)
func (l *Limiter) blockKey(k string) string { return key.Redis(l.prefix+"!block:", k) }

// runBlock peeks (cost 0) or starts (cost 1) key's lockout.
func (l *Limiter) runBlock(ctx context.Context, k string, cost int64, now time.Time) (Decision, error) {
	blk := Limit{Rate: 1, Period: l.block, Burst: 1}
	r, _, err := l.send(ctx, l.blockKey(k), GCRA, blk, cost, now)
	if err != nil {
		return l.finish(ctx, k, cost, now, r, err)
	}
	return decision(r, l.name, blk), nil
}

// decideBlocked is a decision of a limiter with a lockout: the lockout
// first, then the limit, then the lockout again if the limit is used up.
func (l *Limiter) decideBlocked(ctx context.Context, k string, cost int64, now time.Time) (Decision, error) {
	b, err := l.runBlock(ctx, k, 0, now)
	if err != nil || b.Cause != nil {
		return b, err
	}
	if !b.Allowed {
		return Decision{Name: l.name, Limit: l.limit, RetryAfter: b.RetryAfter, ResetAfter: b.RetryAfter}, nil
	}
	d, _, err := l.run(ctx, k, cost, now)
	if err != nil || d.Cause != nil || cost == 0 {
		return d, err
	}
	if d.Allowed && d.Remaining > 0 || !d.Allowed && d.RetryAfter == Never {
		return d, nil
	}
	// Used up: start the lockout. Should that fail, the limit still holds.
	if _, err := l.runBlock(ctx, k, 1, now); err == nil {
		if !d.Allowed {
			d.RetryAfter = max(d.RetryAfter, l.block)
		}
		d.ResetAfter = max(d.ResetAfter, l.block)
	}
	return d, nil
}
