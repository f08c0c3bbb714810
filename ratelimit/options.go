package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redlimit/redlimit/ratelimit/internal/key"
)

// An Option configures a Limiter in New.
type Option func(*Limiter) error

// WithAlgorithm sets the algorithm; the default is GCRA.
func WithAlgorithm(a Algorithm) Option {
	return func(l *Limiter) error { l.alg = a; return nil }
}

// WithPrefix sets the Redis key prefix instead of "rl:<name>:", say to
// move to fresh keys. It may not hold '{' or '}': the limiter places the
// {hash tag} itself (see Limiter.RedisKey).
func WithPrefix(prefix string) Option {
	return func(l *Limiter) error {
		if err := key.CheckPrefix(prefix); err != nil {
			return err
		}
		if prefix == "" {
			return fmt.Errorf("%w: empty prefix", ErrInvalid)
		}
		l.prefix = prefix
		return nil
	}
}

// WithClock makes the limiter send now() as the scripts' clock instead of
// using the server's TIME. The default (nil) is the server's clock, which
// every app server shares; use a caller clock only for tests or when the
// callers' clocks are synchronised. An instant before the Unix epoch or
// after 2^52 µs fails the call with ErrInvalid; the zero time.Time means
// the server's clock.
func WithClock(now func() time.Time) Option {
	return func(l *Limiter) error { l.clock = now; return nil }
}

// WithTimeout bounds each decision: when Redis has not answered within d,
// the decision fails with ErrUnavailable at once, or the failure policy
// decides (OnFailure). 0, the default, leaves decisions to the context the
// caller passes.
func WithTimeout(d time.Duration) Option {
	return func(l *Limiter) error {
		if d < 0 {
			return fmt.Errorf("%w: negative timeout %v", ErrInvalid, d)
		}
		l.timeout = d
		return nil
	}
}

// OnFailure sets what the limiter decides when Redis fails or times out
// (ErrUnavailable): FailOpen allows, FailClosed denies, FailLocal limits in
// this process; the Decision's Fallback and Cause say so. The default, the
// zero Fallback, returns the error.
func OnFailure(f Fallback) Option {
	return func(l *Limiter) error {
		if err := f.check(); err != nil {
			return err
		}
		l.onFailure = f
		return nil
	}
}

// WithHook calls h after every decision, on the caller's goroutine, for
// logs and metrics. Without a hook nothing is measured or built for it.
func WithHook(h func(ctx context.Context, e Event)) Option {
	return func(l *Limiter) error { l.hook = h; return nil }
}

// WithDenyCache keeps up to size recent denials in this process: once Redis
// denies a key with a finite RetryAfter, the limiter denies that key itself
// until then (for at most a minute at a time), with no round trip, so a
// flood of denied requests costs Redis nothing. It never admits, so it never
// lets more through than the limit. 0, the default, turns it off; 10 000 is
// a reasonable size. What it cannot see (a Reset or a limit raised in
// another process, a key changed by hand) is in docs/performance.md.
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
// default, decisions for a key that is already being decided in this
// process wait for that call and then go together, as one call that
// decides them in order with the same answers (GCRA and the token
// buckets; see docs/performance.md).
func WithoutCoalescing() Option {
	return func(l *Limiter) error { l.alone = true; return nil }
}
