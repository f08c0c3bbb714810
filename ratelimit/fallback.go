package ratelimit

// The fallback: what a decision is when Redis cannot make it.

import (
	"context"
	"errors"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// A Fallback is what a limiter decides when a call ends in ErrUnavailable
// (WithFallback). Other errors are always returned. The zero Fallback
// returns the error; in a Decision it means that Redis decided.
type Fallback struct{ p call.Policy }

var (
	// FailOpen allows the request: availability over protection.
	FailOpen = Fallback{call.Policy{Mode: call.Open}}
	// FailClosed denies the request: protection over availability.
	FailClosed = Fallback{call.Policy{Mode: call.Closed}}
)

// FailLocal limits in this process's memory while Redis is unreachable, at
// share of the limit (0 < share <= 1): Rate and Burst times share, rounded
// down, at least 1. With n processes, a share of 1/n keeps the whole close
// to the limit.
func FailLocal(share float64) Fallback {
	return Fallback{call.Policy{Mode: call.Local, Share: share}}
}

func init() {
	call.PolicyOf = func(f any) call.Policy { return f.(Fallback).p }
}

// String is "fail-open", "fail-closed", "fail-local" or "none": the words
// of Decision.String and of the OpenTelemetry adapter.
func (f Fallback) String() string { return f.p.String() }

// fallback is the Decision the limiter's fallback makes for a call that
// failed with err, or err itself when it does not decide.
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
