package ratelimit

// The lockout stage (WithLockout): a key whose limit is used up is locked
// out for a while, whatever the limit says. The lockout is a second Redis
// key, decided by gcra.lua at one request per lockout, so that taking that
// one request is starting the lockout.

import (
	"context"
	"time"
)

// lockout is the lockout stage; with no lockout (block 0) it passes every
// decision on as it is.
type lockout struct {
	block time.Duration
	// prefix is the lockout keys': the limiter's prefix and "!block:".
	// '!' is in no name, so no default prefix of another limiter is this
	// one. (The "!block:" stays as it was: renaming it would forget every
	// lockout under way.)
	prefix   string
	fallback fallback
}

// decide asks the lockout first, then the limit, then starts the lockout
// if the limit is used up.
func (lk *lockout) decide(ctx context.Context, a ask) (Decision, uint64, error) {
	if lk.block == 0 {
		return lk.fallback.decide(ctx, a)
	}
	b, err := lk.askBlock(ctx, a, 0)
	if err != nil || b.Cause != nil {
		return b, 0, err
	}
	if !b.Allowed {
		return Decision{Name: a.name, Limit: a.limit, RetryAfter: b.RetryAfter, ResetAfter: b.RetryAfter, LockedOut: true, Source: sourceLockout}, 0, nil
	}
	d, _, err := lk.fallback.decide(ctx, a)
	if err != nil || d.Cause != nil || a.cost == 0 {
		return d, 0, err
	}
	if d.Allowed && d.Remaining > 0 || !d.Allowed && d.RetryAfter == Never {
		return d, 0, nil
	}
	// Used up: start the lockout. Should that fail, the limit still holds.
	if _, err := lk.askBlock(ctx, a, 1); err == nil {
		if !d.Allowed {
			d.RetryAfter = max(d.RetryAfter, lk.block)
		}
		d.ResetAfter = max(d.ResetAfter, lk.block)
		d.LockedOut = true
	}
	return d, 0, nil
}

// askBlock peeks (cost 0) or starts (cost 1) a's key's lockout. A fallback
// decides over its failure as over the limit's, by the limit.
func (lk *lockout) askBlock(ctx context.Context, a ask, cost int64) (Decision, error) {
	a.alg, a.prefix, a.sends, a.cost = GCRA, lk.prefix, lk.limit(), cost
	d, _, err := lk.fallback.decide(ctx, a)
	return d, err
}

// limit is the lockout's GCRA limit: one request per lockout, so that the
// one request taken is the lockout, and giving it back lifts it.
func (lk *lockout) limit() Limit { return Limit{Rate: 1, Period: lk.block, Burst: 1} }
