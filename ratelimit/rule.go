package ratelimit

import (
	"context"
	"fmt"
)

// A Rule decides requests for keys: a *Limiter, or a rule made by All,
// Atomic or Select, or Unlimited. AllowN counts a request of cost n (1 to
// 1e9) if it passes; Reserve counts it as AllowN does and keeps it open to
// be settled (Limiter.Reserve); Peek reports what one of cost 1 would get,
// counting nothing. A rule that holds other rules keeps their atomicity.
type Rule interface {
	Allow(ctx context.Context, key string) (Decision, error)
	AllowN(ctx context.Context, key string, n int64) (Decision, error)
	Reserve(ctx context.Context, key string, n int64) (*Reservation, error)
	Peek(ctx context.Context, key string) (Decision, error)
}

// Unlimited is the Rule that lets everything pass and reports no limit, so
// httplimit writes no rate-limit fields for it. Select returns it to let a
// key through.
var Unlimited Rule = unlimited{}

type unlimited struct{}

func (u unlimited) Allow(ctx context.Context, key string) (Decision, error) {
	return u.AllowN(ctx, key, 1)
}

func (unlimited) AllowN(_ context.Context, key string, n int64) (Decision, error) {
	if err := checkCost(n); err != nil {
		return Decision{}, err
	}
	return unlimitedFor(key)
}

func (u unlimited) Reserve(ctx context.Context, key string, n int64) (*Reservation, error) {
	d, err := u.AllowN(ctx, key, n)
	return &Reservation{Decision: d}, err
}

func (unlimited) Peek(_ context.Context, key string) (Decision, error) { return unlimitedFor(key) }

func unlimitedFor(key string) (Decision, error) {
	if key == "" {
		return Decision{}, fmt.Errorf("%w: empty key", ErrInvalid)
	}
	return Decision{Allowed: true}, nil
}

// Select returns a Rule that asks choose which rule decides each request:
// a customer's plan (Limiter.WithLimit), Unlimited to let a key through, or
// an error to refuse it. An error from choose is returned as it is; a nil
// rule with a nil error is ErrInvalid.
func Select(choose func(ctx context.Context, key string) (Rule, error)) Rule {
	return selectRule(choose)
}

type selectRule func(ctx context.Context, key string) (Rule, error)

func (s selectRule) rule(ctx context.Context, key string) (Rule, error) {
	r, err := s(ctx, key)
	if err == nil && r == nil {
		return nil, fmt.Errorf("%w: Select chose no rule for %q (return ratelimit.Unlimited to let it through)", ErrInvalid, key)
	}
	return r, err
}

func (s selectRule) Allow(ctx context.Context, key string) (Decision, error) {
	return s.AllowN(ctx, key, 1)
}

func (s selectRule) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	r, err := s.rule(ctx, key)
	if err != nil {
		return Decision{}, err
	}
	return r.AllowN(ctx, key, n)
}

func (s selectRule) Reserve(ctx context.Context, key string, n int64) (*Reservation, error) {
	r, err := s.rule(ctx, key)
	if err != nil {
		return nil, err
	}
	return r.Reserve(ctx, key, n)
}

func (s selectRule) Peek(ctx context.Context, key string) (Decision, error) {
	r, err := s.rule(ctx, key)
	if err != nil {
		return Decision{}, err
	}
	return r.Peek(ctx, key)
}
