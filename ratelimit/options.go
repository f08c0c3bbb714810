package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/option"
)

// WithAlgorithm sets the algorithm; the default is GCRA (SlidingWindowLog
// with WithLockout).
func WithAlgorithm(a Algorithm) Option {
	return func(l *Limiter) error { l.alg, l.algSet = a, true; return nil }
}

// WithPrefix sets the Redis key prefix instead of "rl:<name>:". It may not
// hold '{' or '}': the limiter places the {hash tag} itself.
func WithPrefix(prefix string) Option {
	return func(l *Limiter) error {
		if err := option.Prefix(prefix); err != nil {
			return err
		}
		l.prefix = prefix
		return nil
	}
}

// WithClock makes the limiter send now() as the scripts' clock instead of
// the server's TIME, for tests or synchronised callers. A now() before the
// Unix epoch or after 2^52 µs fails the call with ErrInvalid; the zero
// time.Time means the server's clock.
func WithClock(now func() time.Time) Option {
	return func(l *Limiter) error { l.clock = now; return nil }
}

// WithTimeout bounds each decision: when Redis has not answered within d,
// it fails with ErrUnavailable, or the fallback decides. 0, the default,
// leaves it to the caller's context. A node that answered no call at all
// for as long (it hangs: a stopped process, a partition) has its breaker
// opened, so later decisions fail at once until it answers again
// (docs/operations.md); the caller's own deadline never does that.
func WithTimeout(d time.Duration) Option {
	return func(l *Limiter) error {
		if err := option.Timeout(d); err != nil {
			return err
		}
		l.timeout = d
		return nil
	}
}

// WithFallback sets what the limiter decides when Redis fails or times out
// (ErrUnavailable): FailOpen, FailClosed or FailLocal. The default, the
// zero Fallback, returns the error.
func WithFallback(f Fallback) Option {
	return func(l *Limiter) error {
		if err := option.Fallback(f.p); err != nil {
			return err
		}
		l.onFailure = f
		return nil
	}
}

// WithHook calls h after every decision, on the caller's goroutine, for
// logs and metrics. It may be given several times: each hook is called,
// in the order given, with the same Event. A nil h adds none.
func WithHook(h func(ctx context.Context, e Event)) Option {
	return func(l *Limiter) error {
		if h != nil {
			l.hooks = append(l.hooks, h)
		}
		return nil
	}
}

// WithDenyCache keeps up to size recent denials in this process and
// answers a denied key itself until its RetryAfter (a minute at most), with
// no round trip. It never admits. 0, the default, turns it off; 10 000 is a
// reasonable size.
func WithDenyCache(size int) Option {
	return func(l *Limiter) error {
		if size < 0 {
			return fmt.Errorf("%w: negative deny cache size %d", ErrInvalid, size)
		}
		l.cache = nil
		if size > 0 {
			l.cache = newDenyCache(size)
		}
		return nil
	}
}

// WithoutCoalescing sends every decision to Redis in a call of its own. By
// default, decisions for a key already being decided in this process wait
// for that call and go together, as one call that decides them in order
// with the same answers (GCRA and the token buckets), and calls for other
// keys on a busy node go together in one call of the script's multi-key
// form (see docs/limiters.md).
func WithoutCoalescing() Option {
	return func(l *Limiter) error { l.alone = true; return nil }
}

// WithLockout locks a key out for d once its limit is used up: the request
// that takes the last of it, or one that is denied, starts a lockout during
// which every request for the key is denied, however the limit refills.
// Without WithAlgorithm such a limiter counts with SlidingWindowLog, so Rate
// requests in any Period start it, whatever their pacing. d is a whole
// number of milliseconds, 1 ms to 1e11 ms.
func WithLockout(d time.Duration) Option {
	return func(l *Limiter) error {
		if d < time.Millisecond || d > maxPeriod*time.Millisecond || d%time.Millisecond != 0 {
			return fmt.Errorf("%w: lockout %v, want a whole number of milliseconds from 1ms to 1e11 ms", ErrInvalid, d)
		}
		l.block = d
		return nil
	}
}

// WithSettleWithin sets how long a Reservation may be settled (Reserve):
// after d it stands at the cost it reserved. The default is an hour; d is
// 1 ms to 1e11 ms.
func WithSettleWithin(d time.Duration) Option {
	return func(l *Limiter) error {
		if d < time.Millisecond || d > maxPeriod*time.Millisecond {
			return fmt.Errorf("%w: settle window %v, want 1ms to 1e11 ms", ErrInvalid, d)
		}
		l.settleWithin = d
		return nil
	}
}
