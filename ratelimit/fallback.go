package ratelimit

// The fallback stage: a script's reply becomes a Decision, and when Redis
// cannot decide (ErrUnavailable), the limiter's Fallback decides instead.

import (
	"context"
	"errors"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// fallback is the fallback stage. It decides only over an error that
// covers says it may; every other error goes back up as it is.
type fallback struct {
	policy Fallback
	local  *local // FailLocal's in-memory limiter; nil for other policies
	batch  batcher
}

func (f *fallback) decide(ctx context.Context, a ask) (Decision, uint64, error) {
	r, t, err := f.batch.decide(ctx, a)
	d, err := f.settle(ctx, a, r, err)
	if t.batched && d.Source == sourceRedis {
		d.Source = sourceBatch
	}
	return d, t.seq, err
}

// settle is the Decision for what the send stages returned: r's, or the
// fallback's over err, or none with err.
func (f *fallback) settle(ctx context.Context, a ask, r reply, err error) (Decision, error) {
	if err == nil {
		return r.decision(a.name, a.sends), nil
	}
	ok, err := f.covers(ctx, err)
	if !ok {
		return a.none(), err
	}
	d := Decision{Name: a.name, Limit: a.limit, Fallback: f.policy, Cause: err, Source: f.policy.String()}
	switch f.policy.p.Mode {
	case call.Open:
		d.Allowed = true
	case call.Local:
		d = f.local.decideAt(a.key, a.limit, f.policy.p.Share, a.cost, a.now)
		d.Name, d.Fallback, d.Cause, d.Source = a.name, f.policy, err, f.policy.String()
	}
	return d, nil
}

// covers classifies err and reports whether the fallback may decide over
// it: the limiter has one and Redis could not decide (ErrUnavailable).
// This is the one place that says so, for Atomic's fallbacks too.
func (f *fallback) covers(ctx context.Context, err error) (bool, error) {
	err = call.Classify(ctx, err)
	return f.policy.p.Mode != call.None && errors.Is(err, ErrUnavailable), err
}

// decision is the Decision r says for the limiter name with limit.
func (r reply) decision(name string, limit Limit) Decision {
	d := Decision{
		Allowed:    r.Allowed,
		Name:       name,
		Limit:      limit,
		Remaining:  r.Remaining,
		RetryAfter: r.RetryAfter,
		ResetAfter: r.ResetAfter,
		Source:     sourceRedis,
	}
	if d.RetryAfter < 0 {
		d.RetryAfter = Never
	}
	return d
}
