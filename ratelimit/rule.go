package ratelimit

import (
	"errors"
	"fmt"
	"net/http"
)

// A Rule says which limiters a request must pass. A *Limiter is a Rule
// (itself), Limiters is a Rule (all of them), Tiers picks by the request's
// tier, and RuleFunc turns any function into one.
type Rule interface {
	LimitersFor(r *http.Request) ([]*Limiter, error)
}

// LimitersFor makes a Limiter a Rule: every request must pass it.
func (l *Limiter) LimitersFor(*http.Request) ([]*Limiter, error) { return l.self, nil }

// Limiters is a Rule: every request must pass all of them, checked in one
// round trip (see AllowAll).
type Limiters []*Limiter

// LimitersFor returns ls.
func (ls Limiters) LimitersFor(*http.Request) ([]*Limiter, error) { return ls, nil }

// RuleFunc is a Rule written as a function.
type RuleFunc func(r *http.Request) ([]*Limiter, error)

// LimitersFor calls f.
func (f RuleFunc) LimitersFor(r *http.Request) ([]*Limiter, error) { return f(r) }

// ErrUnknownTier: Tiers found no rule for a request's tier and has no
// default. The middleware answers 500: it is a configuration error.
var ErrUnknownTier = errors.New("ratelimit: unknown tier")

// Tiers applies the rule of the request's tier, as in the free / pro /
// enterprise plans of the Redis rate-limiting guide. Give each tier's
// limiters names of their own (WithName), so a caller who changes tier
// starts afresh instead of inheriting another tier's state.
type Tiers struct {
	// Tier names the request's tier, say from its API key's plan.
	Tier func(r *http.Request) string
	// Rules holds each tier's rule.
	Rules map[string]Rule
	// Default is the tier of a request whose tier is not in Rules; when it
	// is "" too, such a request fails with ErrUnknownTier.
	Default string
}

// LimitersFor applies the rule of r's tier.
func (t Tiers) LimitersFor(r *http.Request) ([]*Limiter, error) {
	rule, err := t.ruleFor(r)
	if err != nil {
		return nil, err
	}
	return rule.LimitersFor(r)
}

// ruleFor is the rule of r's tier (the middleware checks a *Multi
// atomically, so it needs the rule itself).
func (t Tiers) ruleFor(r *http.Request) (Rule, error) {
	name := t.Tier(r)
	rule, ok := t.Rules[name]
	if !ok && t.Default != "" {
		rule, ok = t.Rules[t.Default]
	}
	if !ok {
		return nil, fmt.Errorf("%w %q (and no default)", ErrUnknownTier, name)
	}
	return rule, nil
}
