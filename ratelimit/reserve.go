package ratelimit

// Reserve, then settle: a decision kept open so that its final cost can be
// set once it is known (a login that failed or not, the tokens a model
// used). AllowN is a reservation settled at once. The count happens first,
// as AllowN's does, so callers that come together cannot all pass a peek;
// the settle is a script of its own, atomic with the state it changes
// (gcra.lua's take refund and take charge, token_bucket.lua's refill
// words of the same names, fixed_window.lua's form with take refund or
// charge and the instant the reservation was counted at).

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
)

// A Reservation is n requests that Reserve counted for a key, kept open so
// that Settle can make their final cost. Its methods are safe for
// concurrent use, and do nothing on a nil or denied Reservation.
type Reservation struct {
	// Decision is Reserve's decision: a denied reservation holds nothing,
	// and one a fallback made holds nothing in Redis.
	Decision Decision

	l     *Limiter
	key   string
	n     int64
	at    time.Time // the caller clock it was counted by; zero for the server's
	until time.Time // no settle after

	mu      sync.Mutex
	settled bool
}

// Reserve counts n requests (1 to 1e9) for key if they pass, all or none,
// as AllowN does, and keeps them open: Settle sets their final cost. It
// refuses with ErrInvalid, before Redis, a limiter whose algorithm cannot
// settle (GCRA, the token buckets and FixedWindow can) and one with a
// lockout.
func (l *Limiter) Reserve(ctx context.Context, key string, n int64) (*Reservation, error) {
	if l == nil {
		return nil, errNilLimiter
	}
	if scripts[l.alg].settle == nil || l.block > 0 {
		return nil, fmt.Errorf("%w: limiter %q cannot settle a reservation: Reserve takes GCRA, token bucket and fixed window limiters without a lockout (%v)", ErrInvalid, l.name, l.alg)
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
	r := &Reservation{Decision: d, l: l, key: key, n: n, at: a.now, until: time.Now().Add(l.settleWithin)}
	return r, err
}

// Settle makes m (0 to 1e9) the reservation's final cost: it gives back
// n−m, or counts m−n more, into debt if the limit has no room (later
// requests wait until it is paid). A FixedWindow moves only the count of
// the window (or quota's period) that counted the reservation: once that
// ended, neither is made. A reservation settles once: later calls,
// and calls past WithSettleWithin, fail with ErrInvalid and it stands at n.
// When Redis fails (ErrUnavailable) the settle may or may not have been
// made, and is not made again.
func (r *Reservation) Settle(ctx context.Context, m int64) error {
	if m < 0 || m > maxCount {
		return fmt.Errorf("%w: settle cost m = %d, want 0 to 1e9", ErrInvalid, m)
	}
	if r == nil || !r.Decision.Allowed || r.Decision.Cause != nil {
		return nil // nothing was counted in Redis
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.settled:
		return fmt.Errorf("%w: the reservation of %d for %q is settled already", ErrInvalid, r.n, r.key)
	case time.Now().After(r.until):
		return fmt.Errorf("%w: the reservation of %d for %q is past its settle window (WithSettleWithin) and stands", ErrInvalid, r.n, r.key)
	}
	// Closed before it is sent: a settle whose answer is lost may have
	// been made, and made twice it would give back or count twice.
	r.settled = true
	if m == r.n {
		return nil
	}
	return r.l.settle(ctx, r.key, m-r.n, r.at)
}

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
