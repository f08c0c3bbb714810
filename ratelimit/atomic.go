package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
	"github.com/redlimit/redlimit/ratelimit/internal/guard"
	"github.com/redlimit/redlimit/ratelimit/internal/multikey"
)

// Atomic returns a Rule that checks limiters on one key as one: a request
// passes only when every limiter has room, and then counts against all of
// them, in one script call. It takes 1 to 16 GCRA limiters without a
// lockout, on one client, with prefixes of their own and one kind of clock,
// and refuses anything else with ErrInvalid.
func Atomic(limiters ...*Limiter) (Rule, error) {
	if len(limiters) == 0 || len(limiters) > maxMulti {
		return nil, fmt.Errorf("%w: Atomic takes 1 to %d limiters, got %d", ErrInvalid, maxMulti, len(limiters))
	}
	m := &multi{limiters: append([]*Limiter(nil), limiters...)}
	prefixes := map[string]string{}
	for _, l := range limiters {
		if l == nil {
			return nil, fmt.Errorf("%w: a nil limiter", ErrInvalid)
		}
		if l.alg != GCRA {
			return nil, fmt.Errorf("%w: limiter %q uses %v; an atomic check takes GCRA limiters only (use All for others)", ErrInvalid, l.name, l.alg)
		}
		if l.block > 0 {
			return nil, fmt.Errorf("%w: limiter %q has a lockout (WithLockout), which one script call cannot check", ErrInvalid, l.name)
		}
		if other, ok := prefixes[l.prefix]; ok {
			return nil, fmt.Errorf("%w: limiters %q and %q share the prefix %q, so they would share keys: name them apart", ErrInvalid, other, l.name, l.prefix)
		}
		prefixes[l.prefix] = l.name
		if (l.clock == nil) != (limiters[0].clock == nil) {
			return nil, fmt.Errorf("%w: limiters %q and %q differ in clock (the server's and a caller's); one call has one clock", ErrInvalid, limiters[0].name, l.name)
		}
		if l.timeout > 0 && (m.timeout == 0 || l.timeout < m.timeout) {
			m.timeout = l.timeout
		}
		m.hooked = m.hooked || len(l.hooks) > 0
		m.limits = append(m.limits, l.limit)
	}
	if !sameClient(limiters) {
		return nil, fmt.Errorf("%w: the limiters of Atomic must share one client (one script call reaches one server)", ErrInvalid)
	}
	return m, nil
}

// multi is Atomic's rule: several GCRA limits checked by multi.lua, each
// keeping its state where its Limiter does.
type multi struct {
	limiters []*Limiter
	limits   []Limit
	timeout  time.Duration
	hooked   bool
}

// maxMulti is the most limits multi.lua takes in one call.
const maxMulti = 16

func (m *multi) Allow(ctx context.Context, key string) (Decision, error) {
	return m.AllowN(ctx, key, 1)
}

func (m *multi) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	if err := checkCost(n); err != nil {
		return Decision{}, err
	}
	return m.decide(ctx, key, n)
}

// Reserve counts n against every limiter, all or nothing, as AllowN does;
// a denied reservation holds nothing. Settle settles each limiter with a
// call of its own (gcra.lua's take refund or take charge), one by one.
func (m *multi) Reserve(ctx context.Context, key string, n int64) (*Reservation, error) {
	if err := checkCost(n); err != nil {
		return nil, err
	}
	d, ds, err := m.decideParts(ctx, key, n)
	r := &Reservation{Decision: d}
	if !d.Allowed || err != nil {
		return r, err
	}
	for i, l := range m.limiters {
		if ds[i].Cause != nil {
			continue // a fallback's: nothing counted in Redis
		}
		r.parts = append(r.parts, held{l: l, key: key, n: n})
		if until := time.Now().Add(l.settleWithin); r.until.IsZero() || until.Before(r.until) {
			r.until = until
		}
	}
	return r, nil
}

func (m *multi) Peek(ctx context.Context, key string) (Decision, error) {
	return m.decide(ctx, key, 0)
}

// decide sends one call of multi.lua, then settles each limiter's part
// with its own fallback stage; the in-memory ones (FailLocal) decide
// together, all or nothing like the script.
func (m *multi) decide(ctx context.Context, key string, cost int64) (Decision, error) {
	d, _, err := m.decideParts(ctx, key, cost)
	return d, err
}

// decideParts is decide, with each limiter's Decision.
func (m *multi) decideParts(ctx context.Context, key string, cost int64) (Decision, []Decision, error) {
	var start time.Time
	if m.hooked {
		start = time.Now()
	}
	first := m.limiters[0]
	var replies []reply
	a, err := first.path.validate.check(first.ask(key, cost))
	refused := err != nil
	if now := a.now; err == nil {
		keys := make([]string, len(m.limiters))
		for i, l := range m.limiters {
			keys[i] = l.redisKey(key)
		}
		sent := time.Now()
		replies, err = call.WithTimeout(ctx, m.timeout, func(ctx context.Context) ([]reply, error) {
			return runMulti(ctx, first.rdb, keys, m.limits, cost, now)
		})
		guard.Unanswered(ctx, multikey.Unwrap(first.rdb), keys[0], sent, m.timeout, err) // a hung node
	}
	asks := make([]ask, len(m.limiters))
	ds := make([]Decision, len(m.limiters))
	errs := make([]error, len(m.limiters))
	var locals []int
	othersAllow := true
	for i, l := range m.limiters {
		f := &l.path.validate.cache.lockout.fallback
		asks[i] = l.ask(key, cost)
		asks[i].now = a.now
		switch {
		case err == nil:
			ds[i] = replies[i].decision(l.name, l.limit)
		case refused:
			ds[i], errs[i] = asks[i].none(), err
		default:
			if ok, cause := f.covers(ctx, err); ok && f.policy.p.Mode == call.Local {
				ds[i] = Decision{Cause: cause}
				locals = append(locals, i)
				continue
			}
			ds[i], errs[i] = f.settle(ctx, asks[i], reply{}, err)
			othersAllow = othersAllow && ds[i].Allowed
		}
	}
	if len(locals) > 0 && firstError(errs) == nil {
		// The in-memory decisions, all or nothing like the script's.
		parts := make([]localPart, len(locals))
		for j, i := range locals {
			f := &m.limiters[i].path.validate.cache.lockout.fallback
			parts[j] = localPart{lc: f.local, lim: scaled(m.limiters[i].limit, f.policy.p.Share)}
		}
		for j, d := range decideLocally(parts, key, cost, localNowNs(a.now), othersAllow) {
			i := locals[j]
			d.Name, d.Fallback, d.Cause, d.Source = m.limiters[i].name, m.limiters[i].onFailure, ds[i].Cause, m.limiters[i].onFailure.String()
			ds[i] = d
		}
	}
	for i, l := range m.limiters {
		l.path.tell(ctx, asks[i], ds[i], errs[i], start)
	}
	return combine(ds), ds, firstError(errs)
}
