package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/key"
)

// WithBlock blocks a key for d once it has used up its limit: the request
// that takes the last of the limit (Remaining 0), or one that is denied,
// starts a block during which every request for the key is denied with
// RetryAfter until the block ends, however the limit refills meanwhile.
// It is for brute-force protection: with PerHour(5) and WithBlock(24h),
// five failed logins in a row lock the key out for a day (count only the
// failures: Peek before, AllowN after a failure, as httplimit.WithCountIf
// does). The block lives in a key of its own next to the limit's, on the
// same {hash tag}; Reset clears both. d is a whole number of milliseconds,
// 1 ms to 1e11 ms. A limiter with a block takes one more round trip per
// decision (two when it starts a block) and cannot be part of a Multi.
func WithBlock(d time.Duration) Option {
	return func(l *Limiter) error {
		if d < time.Millisecond || d > maxPeriod*time.Millisecond || d%time.Millisecond != 0 {
			return fmt.Errorf("%w: block %v, want a whole number of milliseconds from 1ms to 1e11 ms", ErrInvalid, d)
		}
		l.block = d
		return nil
	}
}

// blockKey holds key's block: gcra.lua's state for one request per block,
// so that taking that one request is starting the block. '!' is in no
// name, so no default prefix of another limiter is this one.
func (l *Limiter) blockKey(k string) string { return key.Redis(l.prefix+"!block:", k) }

// runBlock peeks (cost 0) or starts (cost 1) key's block.
func (l *Limiter) runBlock(ctx context.Context, k string, cost int64, now time.Time) (Decision, error) {
	blk := Every(l.block)
	r, err := l.send(ctx, l.blockKey(k), GCRA, blk, cost, now)
	if err != nil {
		return l.finish(ctx, k, cost, now, r, err)
	}
	return decision(r, l.name, blk), nil
}

// decideBlocked is a decision of a limiter with a block: the block first,
// then the limit, then the block again if the limit is used up.
func (l *Limiter) decideBlocked(ctx context.Context, k string, cost int64, now time.Time) (Decision, error) {
	b, err := l.runBlock(ctx, k, 0, now)
	if err != nil || b.Cause != nil {
		return b, err
	}
	if !b.Allowed {
		return Decision{Name: l.name, Limit: l.limit, RetryAfter: b.RetryAfter, ResetAfter: b.RetryAfter}, nil
	}
	d, err := l.run(ctx, k, cost, now)
	if err != nil || d.Cause != nil || cost == 0 {
		return d, err
	}
	if d.Allowed && d.Remaining > 0 || !d.Allowed && d.RetryAfter == Never {
		return d, nil
	}
	// Used up: start the block. Should that fail, the limit still holds.
	if _, err := l.runBlock(ctx, k, 1, now); err == nil {
		if !d.Allowed {
			d.RetryAfter = max(d.RetryAfter, l.block)
		}
		d.ResetAfter = max(d.ResetAfter, l.block)
	}
	return d, nil
}
