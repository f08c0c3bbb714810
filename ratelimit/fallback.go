package ratelimit

// The failure policy: what a decision is when Redis cannot make it.

import (
	"context"
	"errors"
	"fmt"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// A Fallback is what a limiter decides when Redis cannot (OnFailure): when
// a call ends in ErrUnavailable. A script's own error answer (ErrWrongType,
// ErrBadState) and ErrInvalid are always returned: they mean a bug or
// foreign data under the key, not an outage. The zero Fallback returns the
// error; in a Decision it means that Redis decided.
type Fallback struct{ p call.Policy }

var (
	// FailOpen allows the request: availability over protection.
	FailOpen = Fallback{call.Policy{Mode: call.Open}}
	// FailClosed denies the request: protection over availability.
	FailClosed = Fallback{call.Policy{Mode: call.Closed}}
)

// FailLocal keeps limiting while Redis is unreachable, in this process and
// in memory, at share of the limit (0 < share <= 1): each limit's Rate and
// Burst times share, rounded down, at least 1. With n processes behind a
// load balancer, a share of 1/n keeps the whole close to the limit. The
// in-memory limiter is a GCRA whatever the algorithm, holds at most 100 000
// keys per limiter (dropping those that are full again first), and starts
// from nothing: what Redis counted before the outage is not known to it.
func FailLocal(share float64) Fallback {
	return Fallback{call.Policy{Mode: call.Local, Share: share}}
}

func init() {
	call.PolicyOf = func(f any) call.Policy { return f.(Fallback).p }
}

// String is "fail-open", "fail-closed", "fail-local(0.25)" or "none".
func (f Fallback) String() string {
	switch f.p.Mode {
	case call.Open:
		return "fail-open"
	case call.Closed:
		return "fail-closed"
	case call.Local:
		return fmt.Sprintf("fail-local(%g)", f.p.Share)
	}
	return "none"
}

func (f Fallback) check() error {
	if !f.p.Valid() {
		return fmt.Errorf("%w: failure policy %v: a FailLocal share must be above 0 and at most 1", ErrInvalid, f)
	}
	return nil
}

// fallback is the Decision the limiter's failure policy makes for a call
// that failed with err, or err itself when it does not decide.
func (l *Limiter) fallback(ctx context.Context, key string, cost int64, now int64, err error) (Decision, error) {
	err = call.Classify(ctx, err)
	if l.onFailure.p.Mode == call.None || !errors.Is(err, ErrUnavailable) {
		return Decision{Name: l.name, Limit: l.limit}, err
	}
	d := Decision{Name: l.name, Limit: l.limit, Fallback: l.onFailure, Cause: err}
	switch l.onFailure.p.Mode {
	case call.Open:
		d.Allowed = true
	case call.Local:
		d = l.local.decide(key, l.limit, l.onFailure.p.Share, cost, now)
		d.Name, d.Fallback, d.Cause = l.name, l.onFailure, err
	}
	return d, nil
}
