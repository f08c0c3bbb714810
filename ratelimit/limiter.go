package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Limiter decides, for any number of keys, whether a request passes a
// Limit. Its state lives in Redis, so every process that builds a Limiter
// with the same name (or prefix), algorithm and limit shares it. A Limiter
// is safe for concurrent use.
type Limiter struct {
	rdb      redis.Scripter
	limit    Limit
	alg      Algorithm
	name     string
	prefix   string
	clock    func() time.Time
	fallback Fallback
	timeout  time.Duration
	hook     Hook
	cache    *denyCache // nil without WithDenyCache
	self     []*Limiter // LimitersFor's answer, made once
}

// New returns a Limiter over rdb: a *redis.Client, *redis.ClusterClient,
// *redis.Ring, redis.UniversalClient, or go-redis's AutoPipeliner (Redis
// 6.2 or later, Valkey, or a managed service; no module). It refuses a
// limit its algorithm cannot take, with a *LimitError that matches
// ErrInvalidLimit, and a redis.Pipeliner, whose replies arrive only at Exec.
// Nothing is sent to Redis until the first decision.
func New(rdb redis.Scripter, limit Limit, opts ...Option) (*Limiter, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: no Redis client", ErrInvalidOption)
	}
	if _, ok := rdb.(redis.Pipeliner); ok {
		return nil, fmt.Errorf("%w: a redis.Pipeliner answers only at Exec; pass the client", ErrInvalidOption)
	}
	l := &Limiter{rdb: guardClient(rdb), limit: limit}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	if !l.alg.valid() {
		return nil, fmt.Errorf("%w: unknown algorithm %v", ErrInvalidOption, l.alg)
	}
	if l.name == "" {
		l.name = l.alg.String()
	}
	if l.prefix == "" {
		l.prefix = "rl:" + l.name + ":"
	}
	if err := checkLimit(l.alg, limit); err != nil {
		return nil, err
	}
	l.self = []*Limiter{l}
	return l, nil
}

// An Option configures a Limiter in New.
type Option func(*Limiter) error

// WithAlgorithm sets the algorithm; the default is GCRA.
func WithAlgorithm(a Algorithm) Option {
	return func(l *Limiter) error { l.alg = a; return nil }
}

// WithName names the limiter: in its Redis keys (prefix "rl:<name>:"), in
// the RateLimit-Policy and RateLimit header fields, and in hook events. The
// default is the algorithm's name, so two limiters with the same algorithm
// share their state unless they are given names (or prefixes) of their own.
// A name has 1 to 64 letters, digits, '_', '-' or '.'.
func WithName(name string) Option {
	return func(l *Limiter) error {
		if err := checkName(name); err != nil {
			return err
		}
		l.name = name
		return nil
	}
}

// WithPrefix sets the Redis key prefix instead of "rl:<name>:". It may not
// hold '{' or '}': the limiter places the {hash tag} itself (see RedisKey).
func WithPrefix(prefix string) Option {
	return func(l *Limiter) error {
		if err := checkPrefix(prefix); err != nil {
			return err
		}
		if prefix == "" {
			return fmt.Errorf("%w: empty prefix", ErrInvalidOption)
		}
		l.prefix = prefix
		return nil
	}
}

// WithClock makes the limiter send now() as the scripts' clock instead of
// using the server's TIME. The default (nil) is the server's clock, which
// every app server shares; use a caller clock only for tests or when the
// callers' clocks are synchronised. An instant before the Unix epoch or
// after 2^52 µs fails the call with ErrClock; the zero time.Time means the
// server's clock.
func WithClock(now func() time.Time) Option {
	return func(l *Limiter) error { l.clock = now; return nil }
}

// WithTimeout bounds each decision: when Redis has not answered within d,
// the decision returns ErrTimeout at once, or is decided by the failure
// policy (OnFailure). The call itself is abandoned, and ends when go-redis
// gives up on it (its ReadTimeout, or the context deadline where the client
// sets ContextTimeoutEnabled). 0, the default, leaves decisions to the
// context the caller passes.
func WithTimeout(d time.Duration) Option {
	return func(l *Limiter) error {
		if d < 0 {
			return fmt.Errorf("%w: negative timeout %v", ErrInvalidOption, d)
		}
		l.timeout = d
		return nil
	}
}

// OnFailure sets what the limiter decides when Redis fails or times out:
// FailOpen allows, FailClosed denies, and the Decision's Fallback and Cause
// say so. The default, NoFallback, returns the error.
func OnFailure(f Fallback) Option {
	return func(l *Limiter) error {
		if f < NoFallback || f > FailClosed {
			return fmt.Errorf("%w: unknown fallback %d", ErrInvalidOption, int(f))
		}
		l.fallback = f
		return nil
	}
}

// WithHook calls h after every decision, for logs and metrics. Without a
// hook nothing is measured or built for it.
func WithHook(h Hook) Option {
	return func(l *Limiter) error { l.hook = h; return nil }
}

// WithDenyCache keeps up to size recent denials in this process: once Redis
// denies a key with a finite RetryAfter, the limiter denies that key itself
// until then (for at most a minute at a time), with no round trip. Under a
// flood of denied requests, which is what it is for, those decisions cost
// Redis nothing. 0, the default, turns it off; 10 000 is a reasonable size.
//
// It never admits anything, so it never lets through more than the limit.
// A cached denial answers requests of the cost it was denied for (Allow and
// Peek are both a cost of 1); another cost asks Redis, since its wait
// cannot be known without it. A denial with RetryAfter Never (a cost above
// Burst), a failure policy's denial and an error are not cached. A cached
// Decision has Cached set, Allowed false and the Limit; RetryAfter counts
// down to the instant Redis gave, so it is never shorter than the real
// wait; Remaining is what Redis answered with the denial and ResetAfter
// counts down from Redis's answer: those two are estimates, since time and
// other callers may have moved them since.
//
// The cache follows the limiter's clock: with WithClock it reads that
// clock, so a test's fake clock moves it; with the server's clock it
// measures RetryAfter on this process's monotonic clock from the moment the
// request was sent, which is at or before the moment Redis judged it. The
// two clocks can differ only in rate, by far less than the 60 s that the
// scripts grant a caller clock over the minute an entry can live. It stops
// serving a denial 1 ms before RetryAfter ends, since RetryAfter is rounded
// up to whole milliseconds.
//
// What it cannot see, until the cached RetryAfter or the minute is over: a
// Reset made by another process or another Limiter (Reset on this Limiter
// clears its entry), a limit raised in another process, the key deleted or
// changed by hand in Redis, and a server clock that was moved (a miniredis
// SetTime in a test with the server's clock: use WithClock there, or leave
// the cache off). It holds at most size keys, each of at most 200 bytes
// (longer keys are never cached), dropping expired entries and then the
// soonest to expire, and is safe for concurrent use.
//
// The limiter's own calls and AllowAll use the cache; a Multi over the
// limiter does not (it neither reads nor fills it).
func WithDenyCache(size int) Option {
	return func(l *Limiter) error {
		if size < 0 {
			return fmt.Errorf("%w: negative deny cache size %d", ErrInvalidOption, size)
		}
		l.cache = nil
		if size > 0 {
			l.cache = newDenyCache(size)
		}
		return nil
	}
}

// Limit returns the limiter's Limit.
func (l *Limiter) Limit() Limit { return l.limit }

// Algorithm returns the limiter's algorithm.
func (l *Limiter) Algorithm() Algorithm { return l.alg }

// Name returns the limiter's name.
func (l *Limiter) Name() string { return l.name }

// RedisKey returns the Redis key that holds key's state.
func (l *Limiter) RedisKey(key string) string { return RedisKey(l.prefix, key) }

// Allow counts one request for key if it passes.
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN counts n requests (or a request of cost n) for key if they pass,
// all or none. n must be from 1 to 1e9: there is no cost that only looks
// (use Peek). An n above the Limit's Burst is denied with RetryAfter Never.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	if n < 1 || n > maxCount {
		return Decision{}, fmt.Errorf("%w: n = %d, want 1 to 1e9 (Peek looks without counting)", ErrInvalidCost, n)
	}
	return l.decide(ctx, key, n)
}

// Peek reports whether one request for key would pass now, and what
// Remaining, RetryAfter and ResetAfter are, without counting anything or
// writing to Redis.
func (l *Limiter) Peek(ctx context.Context, key string) (Decision, error) {
	return l.decide(ctx, key, 0)
}

// Reset forgets key's state: its next request meets a full limiter. It
// needs a client with DEL (every go-redis client has it). It also drops
// key's entry from this limiter's deny cache, whether or not DEL succeeded.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	del, ok := l.rdb.(interface {
		Del(ctx context.Context, keys ...string) *redis.IntCmd
	})
	if !ok {
		return fmt.Errorf("%w: %T has no Del", ErrInvalidOption, l.rdb)
	}
	err := del.Del(ctx, l.RedisKey(key)).Err()
	// After DEL, so that a denial Redis made before it and that arrives
	// while DEL is on its way is dropped, not kept (see denyCache.epoch).
	if l.cache != nil {
		l.cache.forget(key)
	}
	return wrap(err)
}

// decide makes one decision; cost 0 peeks. The deny cache, when there is
// one, answers first.
func (l *Limiter) decide(ctx context.Context, key string, cost int64) (Decision, error) {
	var start time.Time
	if l.hook != nil {
		start = time.Now()
	}
	var r reply
	now, err := l.now(key)
	var ck cacheCheck
	if err == nil && l.cache != nil {
		var d Decision
		if d, ck = l.cached(key, cost, now); d.Cached {
			if l.hook != nil {
				l.hook(ctx, Event{Limiter: l, Key: key, Cost: cost, Decision: d, Duration: time.Since(start)})
			}
			return d, nil
		}
	}
	switch {
	case err != nil:
	case l.timeout == 0:
		r, err = scripts[l.alg].run(ctx, l.rdb, l.RedisKey(key), l.limit, cost, now)
	default:
		r, err = withTimeout(ctx, l.timeout, func(ctx context.Context) (reply, error) {
			return scripts[l.alg].run(ctx, l.rdb, l.RedisKey(key), l.limit, cost, now)
		})
	}
	d, err := l.finish(ctx, r, err)
	if ck.ok && err == nil {
		l.cache.note(key, cost, ck.at, ck.epoch, d)
	}
	if l.hook != nil {
		l.hook(ctx, Event{Limiter: l, Key: key, Cost: cost, Decision: d, Err: err, Duration: time.Since(start)})
	}
	return d, err
}

// cacheCheck is what a request that the deny cache did not answer needs to
// store Redis's denial: the cache's clock and epoch before it was sent.
type cacheCheck struct {
	ok    bool
	at    int64
	epoch uint64
}

// cached asks the deny cache about a request judged at now (the zero time
// for the server's clock).
func (l *Limiter) cached(key string, cost int64, now time.Time) (Decision, cacheCheck) {
	at, ok := l.cache.clock(l, now)
	if !ok {
		return Decision{}, cacheCheck{}
	}
	// The epoch is read before the lookup, and so before the request is
	// sent.
	ck := cacheCheck{ok: true, at: at, epoch: l.cache.epoch.Load()}
	if d, hit := l.cache.lookup(key, cost, at, l.limit.Burst); hit {
		return d, ck
	}
	return Decision{}, ck
}

// now checks the key and reads the caller clock, if any.
func (l *Limiter) now(key string) (time.Time, error) {
	if key == "" {
		return time.Time{}, fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if l.clock == nil {
		return time.Time{}, nil
	}
	t := l.clock()
	if !t.IsZero() {
		if us := t.UnixMicro(); us <= 0 || us > maxClockUs {
			return time.Time{}, fmt.Errorf("%w: %v", ErrClock, t)
		}
	}
	return t, nil
}

// finish turns a reply or an error into the Decision the caller gets,
// applying the failure policy.
func (l *Limiter) finish(ctx context.Context, r reply, err error) (Decision, error) {
	if err == nil {
		return decision(r, l.limit.Burst), nil
	}
	err = wrap(err)
	if l.fallback == NoFallback || !redisFailed(ctx, err) {
		return Decision{Limit: l.limit.Burst}, err
	}
	return Decision{Allowed: l.fallback == FailOpen, Limit: l.limit.Burst, Fallback: l.fallback, Cause: err}, nil
}
