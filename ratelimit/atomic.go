package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// A Multi checks several limits on one key as one, atomically: "10 a
// second and 1000 an hour" for one user. A request passes only when every
// limit has room for it, and then counts against all of them; when any
// limit denies, it counts against none. It is one round trip and one
// script (multi.lua), so no other request can slip in between the limits.
//
// Each limit is one of the given Limiters, which must use GCRA (the
// default), and keeps its state where that Limiter does: a Limiter asked
// alone (Peek, Allow, Reset) sees what the Multi counts. GCRA, because its
// check is arithmetic on one stored number per limit, so every limit can be
// judged before any is written, which is what all or nothing needs.
//
// Multi or All? All takes any rules and algorithms but is not atomic: a
// request one limit denies is still counted by the others. A Multi never
// does, but takes only GCRA limiters on one client, at most 16.
type Multi struct {
	limiters []*Limiter
	limits   []Limit
	timeout  time.Duration
	hooked   bool
}

// maxMulti is the most limits multi.lua takes in one call.
const maxMulti = 16

// NewMulti returns a Multi over limiters: 1 to 16 of them, each with GCRA
// and no block (WithBlock), on one client, each with a prefix of its own
// (so each has a key of its own), and either all with the server's clock
// or all with a caller clock (WithClock), in which case the first one's is
// read. It refuses anything else with ErrInvalid. Each limiter keeps its
// own failure policy and hook (FailLocal limiters decide in memory all or
// nothing too); the shortest timeout among them bounds the round trip.
// Their deny caches are not used: every call goes to Redis.
func NewMulti(limiters ...*Limiter) (*Multi, error) {
	if len(limiters) == 0 || len(limiters) > maxMulti {
		return nil, fmt.Errorf("%w: a Multi takes 1 to %d limiters, got %d", ErrInvalid, maxMulti, len(limiters))
	}
	m := &Multi{limiters: append([]*Limiter(nil), limiters...)}
	prefixes := map[string]string{}
	for _, l := range limiters {
		if l == nil {
			return nil, fmt.Errorf("%w: a nil limiter", ErrInvalid)
		}
		if l.alg != GCRA {
			return nil, fmt.Errorf("%w: limiter %q uses %v; an atomic check takes GCRA limiters only (use All for others)", ErrInvalid, l.name, l.alg)
		}
		if l.block > 0 {
			return nil, fmt.Errorf("%w: limiter %q has a block (WithBlock), which one script call cannot check", ErrInvalid, l.name)
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
		m.hooked = m.hooked || l.hook != nil
		m.limits = append(m.limits, l.limit)
	}
	if !sameClient(limiters) {
		return nil, fmt.Errorf("%w: the limiters of a Multi must share one client (one script call reaches one server)", ErrInvalid)
	}
	return m, nil
}

// AllowN counts n requests (a request of cost n, 1 to 1e9) for key against
// every limit if every limit has room for n, and against none otherwise.
// The Decision's Parts hold one Decision per limiter, in order, whose
// Allowed says whether that limit had room (when another denied, none
// counted it, and Remaining and ResetAfter are as the key stands); its
// other fields are those of the limit that binds: on a denial, the one
// whose RetryAfter is longest, which is when the request would pass if
// nothing else came.
func (m *Multi) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	if err := checkCost(n); err != nil {
		return Decision{}, err
	}
	return m.decide(ctx, key, n)
}

// Peek reports what AllowN(ctx, key, 1) would decide now, counting
// nothing and writing nothing.
func (m *Multi) Peek(ctx context.Context, key string) (Decision, error) {
	return m.decide(ctx, key, 0)
}

func (m *Multi) decide(ctx context.Context, key string, cost int64) (Decision, error) {
	var start time.Time
	if m.hooked {
		start = time.Now()
	}
	first := m.limiters[0]
	var replies []reply
	now, err := first.now(key)
	refused := err != nil
	if err == nil {
		keys := make([]string, len(m.limiters))
		for i, l := range m.limiters {
			keys[i] = l.RedisKey(key)
		}
		replies, err = call.WithTimeout(ctx, m.timeout, func(ctx context.Context) ([]reply, error) {
			return runMulti(ctx, first.rdb, keys, m.limits, cost, now)
		})
	}
	ds := make([]Decision, len(m.limiters))
	errs := make([]error, len(m.limiters))
	var locals []int
	othersAllow := true
	for i, l := range m.limiters {
		switch {
		case err == nil:
			ds[i] = decision(replies[i], l.name, l.limit)
		case refused:
			ds[i], errs[i] = Decision{Name: l.name, Limit: l.limit}, err
		case l.onFailure.p.Mode == call.Local && errors.Is(call.Classify(ctx, err), ErrUnavailable):
			ds[i] = Decision{Cause: call.Classify(ctx, err)}
			locals = append(locals, i)
		default:
			ds[i], errs[i] = l.fallback(ctx, key, cost, 0, err)
			othersAllow = othersAllow && ds[i].Allowed
		}
	}
	if len(locals) > 0 && firstError(errs) == nil {
		// The in-memory decisions, all or nothing like the script's.
		for j, d := range decideLocally(m.limiters, locals, key, cost, localNowNs(now), othersAllow) {
			i := locals[j]
			d.Name, d.Fallback, d.Cause = m.limiters[i].name, m.limiters[i].onFailure, ds[i].Cause
			ds[i] = d
		}
	}
	for i, l := range m.limiters {
		if l.hook != nil {
			l.hook(ctx, Event{Name: l.name, Key: key, Cost: cost, Decision: ds[i], Err: errs[i], Duration: time.Since(start)})
		}
	}
	return combine(ds), firstError(errs)
}
