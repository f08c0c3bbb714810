package ratelimit

import (
	"context"
	"fmt"
	"time"
)

// AllowAll counts one request for key against several limiters, such as a
// per-second and a per-day limit, and returns their decisions in order.
// The request passes when every decision allows it (Strictest says which
// one binds).
//
// The limiters are checked in one round trip (one pipeline) when they share
// a client that can pipeline, which every go-redis client can; otherwise one
// after another. The check is not atomic: each limiter counts the request
// on its own, so a request that one limiter denies is still counted by the
// limiters that allowed it, as if they had been asked one after another
// without stopping at the first denial. (To check several limits
// atomically, counting only when all allow, use a Multi; it relies on one
// caller's state under every limiter sharing one Cluster slot.)
//
// Each limiter applies its own failure policy, deny cache and hook (a
// limiter whose cache answers is not sent at all); the shortest timeout
// among the limiters sent bounds the whole round trip. The error is the
// first one a limiter returned; the decisions are filled in all the same.
// No limiters, or a nil one, is refused with ErrInvalidOption before
// anything is sent.
func AllowAll(ctx context.Context, key string, limiters ...*Limiter) ([]Decision, error) {
	return AllowAllN(ctx, key, 1, limiters...)
}

// AllowAllN is AllowAll for n requests (a request of cost n).
func AllowAllN(ctx context.Context, key string, n int64, limiters ...*Limiter) ([]Decision, error) {
	if len(limiters) == 0 {
		return nil, fmt.Errorf("%w: AllowAll needs at least one limiter", ErrInvalidOption)
	}
	for i, l := range limiters {
		if l == nil {
			return nil, fmt.Errorf("%w: limiter %d is nil", ErrInvalidOption, i)
		}
	}
	if n < 1 || n > maxCount {
		return nil, fmt.Errorf("%w: n = %d, want 1 to 1e9", ErrInvalidCost, n)
	}
	if len(limiters) == 1 || !sameClient(limiters) {
		return allowEach(ctx, key, n, limiters)
	}

	start := time.Now()
	// Limiters whose deny cache answers are decided here; the others go
	// to Redis in one pipeline (send holds their indexes).
	ds := make([]Decision, len(limiters))
	checks := make([]cacheCheck, len(limiters))
	calls := make([]call, 0, len(limiters))
	send := make([]int, 0, len(limiters))
	errs := make([]error, len(limiters))
	var timeout time.Duration
	for i, l := range limiters {
		now, err := l.now(key)
		errs[i] = err
		if err == nil && l.cache != nil {
			if ds[i], checks[i] = l.cached(key, n, now); ds[i].Cached {
				continue
			}
		}
		calls = append(calls, call{alg: l.alg, key: l.RedisKey(key), limit: l.limit, cost: n, now: now})
		send = append(send, i)
		if l.timeout > 0 && (timeout == 0 || l.timeout < timeout) {
			timeout = l.timeout
		}
	}
	replies := make([]reply, len(limiters))
	if first := firstError(errs); first != nil {
		for i := range errs {
			errs[i] = first
		}
	} else if len(calls) > 0 {
		type sent struct {
			replies []reply
			errs    []error
		}
		s, err := withTimeout(ctx, timeout, func(ctx context.Context) (sent, error) {
			replies, errs, ok := pipelined(ctx, limiters[0].rdb, calls)
			if !ok {
				return sent{}, errNoPipeline
			}
			return sent{replies, errs}, nil
		})
		if err == errNoPipeline {
			return allowEach(ctx, key, n, limiters)
		}
		for j, i := range send {
			if err != nil { // the timeout: every call shares it
				errs[i] = err
			} else {
				replies[i], errs[i] = s.replies[j], s.errs[j]
			}
		}
	}

	var first error
	for i, l := range limiters {
		var err error
		if !ds[i].Cached {
			ds[i], err = l.finish(ctx, replies[i], errs[i])
			if checks[i].ok && err == nil {
				l.cache.note(key, n, checks[i].at, checks[i].epoch, ds[i])
			}
		}
		if first == nil {
			first = err
		}
		if l.hook != nil {
			l.hook(ctx, Event{Limiter: l, Key: key, Cost: n, Decision: ds[i], Err: err, Duration: time.Since(start)})
		}
	}
	return ds, first
}

var errNoPipeline = fmt.Errorf("ratelimit: the client cannot pipeline")

func allowEach(ctx context.Context, key string, n int64, limiters []*Limiter) ([]Decision, error) {
	ds := make([]Decision, len(limiters))
	var first error
	for i, l := range limiters {
		var err error
		ds[i], err = l.decide(ctx, key, n)
		if first == nil {
			first = err
		}
	}
	return ds, first
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sameClient reports whether every limiter uses one client, so one pipeline
// can carry all their calls. Clients that cannot be compared count as
// different.
func sameClient(limiters []*Limiter) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	c := unguarded(limiters[0].rdb)
	for _, l := range limiters[1:] {
		if unguarded(l.rdb) != c {
			return false
		}
	}
	return true
}

// Strictest returns the index of the decision that binds: among denials,
// the one with the longest RetryAfter (Never first); when all allow, the
// one with the least Remaining. Decisions a failure policy made bind only
// when no decision from Redis does. It returns -1 for no decisions.
func Strictest(ds []Decision) int {
	best := -1
	for i, d := range ds {
		if best < 0 || stricter(d, ds[best]) {
			best = i
		}
	}
	return best
}

func stricter(a, b Decision) bool {
	if (a.Fallback == NoFallback) != (b.Fallback == NoFallback) {
		// A denial always binds; otherwise Redis's answer says more.
		if a.Allowed != b.Allowed {
			return !a.Allowed
		}
		return a.Fallback == NoFallback
	}
	switch {
	case a.Allowed != b.Allowed:
		return !a.Allowed
	case !a.Allowed:
		return a.RetryAfter > b.RetryAfter
	}
	return a.Remaining < b.Remaining
}
