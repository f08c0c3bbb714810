package ratelimit

// Reserve, then settle: a decision kept open so that its final cost can be
// set once it is known (a login that failed or not, the tokens a model
// used). AllowN is a reservation settled at once. The count happens first,
// as AllowN's does, so callers that come together cannot all pass a peek;
// the settle is a script of its own, atomic with the state it changes
// (gcra.lua's take refund and take charge, token_bucket.lua's refill
// words of the same names, the settle argument of leaky_bucket.lua,
// sliding_window_counter.lua and sliding_window_log.lua, fixed_window.lua's
// form with take refund or charge; the windows settle in the window, or at
// the instant, that counted the reservation). A rule over several limits
// (Atomic, All) reserves in each as it counts, and settles each part with
// a call of its own, one by one.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// A Reservation is n requests that Reserve counted for a key, kept open so
// that Settle can make their final cost. Its methods are safe for
// concurrent use, and do nothing on a nil Reservation or one that counted
// nothing (denied, or decided by a fallback).
type Reservation struct {
	// Decision is Reserve's decision: a denied reservation holds nothing,
	// but for All's (see All), and one a fallback made holds nothing in
	// Redis.
	Decision Decision

	parts []held
	until time.Time // no settle after

	mu      sync.Mutex
	settled bool
}

// held is one limit's part of a reservation: what it counted, where.
type held struct {
	l   *Limiter
	key string
	n   int64
	at  time.Time // the caller clock it was counted by; zero for the server's
	// lockout: counting it used the limit up and the key is locked out
	// (WithLockout); a refund lifts the lockout.
	lockout bool
}

// Reserve counts n requests (1 to 1e9) for key if they pass, all or none,
// as AllowN does, and keeps them open: Settle sets their final cost. With
// a lockout, the reservation that uses the limit up starts it, and giving
// any of it back lifts it. For the windows it counts on this process's
// clock (WithClock), which must be within 60 s of the server's.
func (l *Limiter) Reserve(ctx context.Context, key string, n int64) (*Reservation, error) {
	if l == nil {
		return nil, errNilLimiter
	}
	if err := checkCost(n); err != nil {
		return nil, err
	}
	a := l.ask(key, n)
	if scripts[l.alg].settleAt {
		// Counted on this process's clock, so that Settle can name the
		// window that counted it; the scripts take a clock within 60 s
		// of the server's.
		now, err := call.Clock(l.clock)
		if err != nil {
			return nil, err
		}
		if now.IsZero() {
			now = time.Now()
		}
		a.now = now
	}
	d, err := l.path.decide(ctx, a)
	r := &Reservation{Decision: d, until: time.Now().Add(l.settleWithin)}
	if d.Allowed && d.Cause == nil && err == nil {
		r.parts = []held{{l: l, key: key, n: n, at: a.now, lockout: d.LockedOut}}
	}
	return r, err
}

// reservationOf joins the reservations of a rule's parts under its
// Decision d; it is settled by the earliest of their settle windows.
func reservationOf(d Decision, rs []*Reservation) *Reservation {
	r := &Reservation{Decision: d}
	for _, sub := range rs {
		if sub == nil {
			continue
		}
		r.parts = append(r.parts, sub.parts...)
		if r.until.IsZero() || sub.until.Before(r.until) {
			r.until = sub.until
		}
	}
	return r
}

// Settle makes m (0 to 1e9) the reservation's final cost: it gives back
// n−m, or counts m−n more, into debt if the limit has no room (later
// requests wait until it is paid). A window moves only the count of the
// window (or quota's period) that counted the reservation: once that
// ended, neither is made. A reservation settles once: later calls, and
// calls past WithSettleWithin, fail with ErrInvalid and it stands at n;
// so does a SlidingWindowLog charge past the 10000 entries a log holds.
// When Redis fails (ErrUnavailable) the settle may or may not have been
// made, and is not made again. A reservation over several limits settles
// each in turn; its error names the limits left unsettled.
func (r *Reservation) Settle(ctx context.Context, m int64) error {
	if m < 0 || m > maxCount {
		return fmt.Errorf("%w: settle cost m = %d, want 0 to 1e9", ErrInvalid, m)
	}
	if r == nil || len(r.parts) == 0 {
		return nil // nothing was counted in Redis
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.parts[0]
	switch {
	case r.settled:
		return fmt.Errorf("%w: the reservation of %d for %q is settled already", ErrInvalid, p.n, p.key)
	case time.Now().After(r.until):
		return fmt.Errorf("%w: the reservation of %d for %q is past its settle window (WithSettleWithin) and stands", ErrInvalid, p.n, p.key)
	}
	// Closed before it is sent: a settle whose answer is lost may have
	// been made, and made twice it would give back or count twice.
	r.settled = true
	var first error
	var done, failed []string
	for _, p := range r.parts {
		err := p.settle(ctx, m)
		if err == nil {
			done = append(done, p.l.name)
			continue
		}
		if first == nil {
			first = err
		}
		failed = append(failed, p.l.name)
	}
	if first == nil {
		return nil
	}
	if len(r.parts) == 1 {
		return first
	}
	return &settleError{err: first, done: done, failed: failed}
}

// settle makes m the part's final cost, and lifts the lockout its count
// started when it gives back.
func (p held) settle(ctx context.Context, m int64) error {
	if m == p.n {
		return nil
	}
	if err := p.l.settle(ctx, p.key, m-p.n, p.at); err != nil {
		return err
	}
	if p.lockout && m < p.n {
		return p.l.lift(ctx, p.key)
	}
	return nil
}

// A settleError says which limits of a reservation a settle left as they
// were counted, and why (the first error).
type settleError struct {
	err          error
	done, failed []string
}

func (e *settleError) Error() string {
	settled := "none"
	if len(e.done) > 0 {
		settled = strings.Join(e.done, ", ")
	}
	return fmt.Sprintf("%v: the reservation is not settled in %s (settled in %s)", e.err, strings.Join(e.failed, ", "), settled)
}

func (e *settleError) Unwrap() error { return e.err }

// Cancel gives the whole reservation back: Settle(ctx, 0).
func (r *Reservation) Cancel(ctx context.Context) error { return r.Settle(ctx, 0) }

// settle gives back (delta < 0) or counts (delta > 0) units for key,
// reserved at the instant at, in one script call within the limiter's
// timeout. No fallback decides over its failure: a settle that Redis did
// not make is returned as an error.
func (l *Limiter) settle(ctx context.Context, key string, delta int64, at time.Time) error {
	now, err := call.Clock(l.clock)
	if err != nil {
		return err
	}
	_, err = call.WithTimeout(ctx, l.timeout, func(ctx context.Context) (reply, error) {
		return scripts[l.alg].settle(ctx, l.rdb, l.redisKey(key), l.limit, delta, now, at)
	})
	if err != nil {
		return call.Classify(ctx, err)
	}
	// A refund makes room that a cached denial knows nothing of.
	if delta < 0 && l.cache != nil {
		l.cache.forget(key)
	}
	return nil
}

// lift ends key's lockout: the lockout is a GCRA of one request per
// lockout (lockout.go), and a refund of that one request makes it full.
func (l *Limiter) lift(ctx context.Context, key string) error {
	now, err := call.Clock(l.clock)
	if err != nil {
		return err
	}
	lk := &l.path.validate.cache.lockout
	_, err = call.WithTimeout(ctx, l.timeout, func(ctx context.Context) (reply, error) {
		return settleGCRA(ctx, l.rdb, l.blockKey(key), lk.limit(), -1, now, time.Time{})
	})
	if err != nil {
		return fmt.Errorf("the lockout of %q is not lifted: %w", key, call.Classify(ctx, err))
	}
	if l.cache != nil {
		l.cache.forget(key)
	}
	return nil
}
