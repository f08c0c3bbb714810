package ratelimit

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// A Multi checks several limits on one key as one, atomically: "10 a
// second and 1000 an hour" for one user. A request passes only when every
// limit has room for it, and then counts against all of them; when any
// limit denies, it counts against none. It is one round trip and one
// script (multi.lua), so no other request can slip in between the limits.
//
// Each limit is one of the given Limiters, which must use GCRA (the
// default), and keeps its state where that Limiter does: Multi and each
// Limiter on its own read and write the same keys, so a Limiter can be
// asked alone (Peek, Allow) or reset, and its state is the one the Multi
// counts. GCRA, because its check is arithmetic on one stored number per
// limit, so every limit can be judged before any is written, which is
// what all or nothing needs.
//
// Multi or AllowAll? AllowAll works with any algorithm and any mix of
// clients, but is not atomic: a request one limiter denies is still counted
// by the others, so a client hammering a small per-second limit also
// drains its daily quota with requests that never passed. Multi never
// does, but takes only GCRA limiters on one client, at most 16.
//
// Multi is a Rule: the Middleware checks its limiters atomically, and
// reports every one in RateLimit-Policy and RateLimit (see SetHeaders).
type Multi struct {
	limiters []*Limiter
	limits   []Limit
	timeout  time.Duration
	hooked   bool
}

// maxMulti is the most limits multi.lua takes in one call.
const maxMulti = 16

// NewMulti returns a Multi over limiters: 1 to 16 of them, each with
// GCRA, on one client, each with its own name or prefix (so each has a
// key of its own), and either all with the server's clock or all with a
// caller clock (WithClock), in which case the first one's is read. It
// refuses anything else with ErrInvalidOption. Each limiter keeps its own
// failure policy and hook; the shortest timeout among them bounds the
// round trip. Their deny caches (WithDenyCache) are not used: a Multi
// neither reads nor fills them, so every call goes to Redis.
func NewMulti(limiters ...*Limiter) (*Multi, error) {
	if len(limiters) == 0 || len(limiters) > maxMulti {
		return nil, fmt.Errorf("%w: a Multi takes 1 to %d limiters, got %d", ErrInvalidOption, maxMulti, len(limiters))
	}
	m := &Multi{limiters: append([]*Limiter(nil), limiters...)}
	prefixes := map[string]string{}
	for _, l := range limiters {
		if l == nil {
			return nil, fmt.Errorf("%w: a nil limiter", ErrInvalidOption)
		}
		if l.alg != GCRA {
			return nil, fmt.Errorf("%w: limiter %q uses %v; an atomic check takes GCRA limiters only (use AllowAll for others)", ErrInvalidOption, l.name, l.alg)
		}
		if other, ok := prefixes[l.prefix]; ok {
			return nil, fmt.Errorf("%w: limiters %q and %q share the prefix %q, so they would share keys: name them apart (WithName)", ErrInvalidOption, other, l.name, l.prefix)
		}
		prefixes[l.prefix] = l.name
		if (l.clock == nil) != (limiters[0].clock == nil) {
			return nil, fmt.Errorf("%w: limiters %q and %q differ in clock (the server's and a caller's); one call has one clock", ErrInvalidOption, limiters[0].name, l.name)
		}
		if l.timeout > 0 && (m.timeout == 0 || l.timeout < m.timeout) {
			m.timeout = l.timeout
		}
		m.hooked = m.hooked || l.hook != nil
		m.limits = append(m.limits, l.limit)
	}
	if !sameClient(limiters) {
		return nil, fmt.Errorf("%w: the limiters of a Multi must share one client (one script call reaches one server)", ErrInvalidOption)
	}
	return m, nil
}

// Limiters returns the Multi's limiters, in order.
func (m *Multi) Limiters() []*Limiter { return append([]*Limiter(nil), m.limiters...) }

// LimitersFor makes a Multi a Rule. The Middleware checks them atomically,
// as the Multi does; AllowAll, given them, would not.
func (m *Multi) LimitersFor(*http.Request) ([]*Limiter, error) { return m.limiters, nil }

// Allow counts one request for key against every limit, or against none.
func (m *Multi) Allow(ctx context.Context, key string) ([]Decision, error) {
	return m.AllowN(ctx, key, 1)
}

// AllowN counts n requests (a request of cost n) for key against every
// limit if every limit has room for n, and against none otherwise. It
// returns one Decision per limiter, in order; the request passed when
// every Decision is Allowed. A Decision's Allowed says whether its limit
// had room: when another limit denied, the request was counted by none,
// those with room included, and Remaining and ResetAfter are as the key
// stands. Strictest(ds) is the limit that binds: on a denial, the one
// whose RetryAfter is longest, which is when the request would pass if
// nothing else came. n must be from 1 to 1e9.
func (m *Multi) AllowN(ctx context.Context, key string, n int64) ([]Decision, error) {
	if n < 1 || n > maxCount {
		return nil, fmt.Errorf("%w: n = %d, want 1 to 1e9 (Peek looks without counting)", ErrInvalidCost, n)
	}
	return m.decide(ctx, key, n)
}

// Peek reports what AllowN(ctx, key, 1) would decide now, counting
// nothing and writing nothing.
func (m *Multi) Peek(ctx context.Context, key string) ([]Decision, error) {
	return m.decide(ctx, key, 0)
}

func (m *Multi) decide(ctx context.Context, key string, cost int64) ([]Decision, error) {
	var start time.Time
	if m.hooked {
		start = time.Now()
	}
	first := m.limiters[0]
	var replies []reply
	now, err := first.now(key)
	if err == nil {
		keys := make([]string, len(m.limiters))
		for i, l := range m.limiters {
			keys[i] = l.RedisKey(key)
		}
		replies, err = withTimeout(ctx, m.timeout, func(ctx context.Context) ([]reply, error) {
			return runMulti(ctx, first.rdb, keys, m.limits, cost, now)
		})
	}
	ds := make([]Decision, len(m.limiters))
	var firstErr error
	for i, l := range m.limiters {
		var r reply
		if err == nil {
			r = replies[i]
		}
		d, e := l.finish(ctx, r, err)
		ds[i] = d
		if firstErr == nil {
			firstErr = e
		}
		if l.hook != nil {
			l.hook(ctx, Event{Limiter: l, Key: key, Cost: cost, Decision: d, Err: e, Duration: time.Since(start)})
		}
	}
	return ds, firstErr
}

// checker is how the middleware checks a request: atomically when its
// rule is, or picks, a *Multi; else with AllowAllN.
type checker func(ctx context.Context, key string, n int64) ([]Decision, error)

// tiered is a rule that picks another rule by the request: Tiers and
// *Tiers (whose method set includes Tiers's).
type tiered interface {
	ruleFor(r *http.Request) (Rule, error)
}

// checkerFor resolves rule for r into its limiters and how to check them.
func checkerFor(r *http.Request, rule Rule) ([]*Limiter, checker, error) {
	for {
		t, ok := rule.(tiered)
		if !ok {
			break
		}
		next, err := t.ruleFor(r)
		if err != nil {
			return nil, nil, err
		}
		rule = next
	}
	if m, ok := rule.(*Multi); ok {
		return m.limiters, m.AllowN, nil
	}
	limiters, err := rule.LimitersFor(r)
	if err != nil {
		return nil, nil, err
	}
	return limiters, func(ctx context.Context, key string, n int64) ([]Decision, error) {
		return AllowAllN(ctx, key, n, limiters...)
	}, nil
}
