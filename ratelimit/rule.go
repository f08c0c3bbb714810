package ratelimit

import (
	"context"
	"fmt"
)

// A Rule decides requests for keys: a *Limiter (one limit), a *Multi
// (several limits, atomically), All (several rules, each on its own),
// Select (a rule chosen per key) and Unlimited. The middleware of
// httplimit, the framework adapters and Limiter.Wait all take a Rule.
//
// AllowN counts a request of cost n (1 to 1e9) for key if the rule lets it
// pass; Peek reports what a request of cost 1 would get, counting nothing.
// A rule that holds other rules keeps their atomicity: wrapping a Multi in
// All or Select still checks its limits all or nothing.
type Rule interface {
	AllowN(ctx context.Context, key string, n int64) (Decision, error)
	Peek(ctx context.Context, key string) (Decision, error)
}

// Unlimited is the Rule that lets everything pass and reports no limit: its
// Decision has Allowed set, no Name and no Parts, so httplimit writes no
// rate-limit header fields for it. Select returns it to skip a key (an
// allowlist).
var Unlimited Rule = unlimited{}

type unlimited struct{}

func (unlimited) AllowN(_ context.Context, key string, n int64) (Decision, error) {
	if err := checkCost(n); err != nil {
		return Decision{}, err
	}
	return unlimitedFor(key)
}

func (unlimited) Peek(_ context.Context, key string) (Decision, error) { return unlimitedFor(key) }

func unlimitedFor(key string) (Decision, error) {
	if key == "" {
		return Decision{}, fmt.Errorf("%w: empty key", ErrInvalid)
	}
	return Decision{Allowed: true}, nil
}

// Select returns a Rule that asks choose which rule decides each request:
// a customer's plan looked up by its API key (Limiter.WithLimit gives the
// plan's limit on one shared state), Unlimited for an allowlisted key, or
// an error to refuse the key. An error from choose is returned as it is,
// never decided over by a failure policy and never turned into a fresh
// bucket, so an unknown API key goes to the caller's error handling. choose
// returning neither a rule nor an error is an error (ErrInvalid): return
// Unlimited to let a key through.
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

func (s selectRule) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	r, err := s.rule(ctx, key)
	if err != nil {
		return Decision{}, err
	}
	return r.AllowN(ctx, key, n)
}

func (s selectRule) Peek(ctx context.Context, key string) (Decision, error) {
	r, err := s.rule(ctx, key)
	if err != nil {
		return Decision{}, err
	}
	return r.Peek(ctx, key)
}
