package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
	"github.com/redlimit/redlimit/ratelimit/internal/guard"
	"github.com/redlimit/redlimit/ratelimit/internal/key"
	"github.com/redlimit/redlimit/ratelimit/internal/multikey"
	"github.com/redlimit/redlimit/ratelimit/internal/option"
)

// A Limiter decides whether requests for any number of keys pass a Limit.
// Its state lives in Redis under its name, shared by every Limiter with the
// same name and algorithm, whatever their limits. A Limiter is safe for
// concurrent use.
type Limiter struct {
	name   string
	limit  Limit
	alg    Algorithm
	prefix string
	// path is a decision's stages, built by New from the options below
	// (ARCHITECTURE.md, "A decision's path"). WithLimit's copies share
	// what it points to: the deny cache, the coalescer, FailLocal's state.
	path  hooked
	waits *waitQueue // Wait's turns, shared by WithLimit's copies

	// The options, as set (options.go).
	rdb          redis.Scripter // guarded: a node's breaker
	algSet       bool           // WithAlgorithm chose alg
	clock        func() time.Time
	onFailure    Fallback
	timeout      time.Duration
	hooks        []func(context.Context, Event)
	cache        *denyCache // nil without WithDenyCache
	block        time.Duration
	alone        bool          // WithoutCoalescing
	settleWithin time.Duration // WithSettleWithin
}

// defaultSettleWithin is how long a Reservation may be settled without
// WithSettleWithin.
const defaultSettleWithin = time.Hour

// An Option configures a Limiter in New.
type Option func(*Limiter) error

// New returns a Limiter named name over rdb. The name, 1 to 64 letters,
// digits, '_', '-' or '.', is in its Redis keys ("rl:<name>:{<key>}"),
// header fields and hook events. New refuses with ErrInvalid a limit the
// algorithm cannot take, a bad option, and a redis.Pipeliner (it answers
// only at Exec). It sends nothing to Redis.
func New(rdb Client, name string, limit Limit, opts ...Option) (*Limiter, error) {
	if err := option.Client(rdb); err != nil {
		return nil, err
	}
	if err := key.CheckName(name); err != nil {
		return nil, err
	}
	l := &Limiter{rdb: guard.Wrap(rdb), name: name, limit: limit, prefix: "rl:" + name + ":", waits: &waitQueue{}, settleWithin: defaultSettleWithin}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	if l.block > 0 && !l.algSet {
		l.alg = SlidingWindowLog // a lockout counts in any window (WithLockout)
	}
	if limit.cal != 0 && !l.algSet {
		l.alg = FixedWindow // a quota by the calendar is a fixed window's count
	}
	if !l.alg.valid() {
		return nil, fmt.Errorf("%w: unknown algorithm %v", ErrInvalid, l.alg)
	}
	if err := checkLimit(l.alg, limit); err != nil {
		return nil, err
	}
	var local *local
	if l.onFailure.p.Mode == call.Local {
		local = newLocal()
	}
	var batches *coalescer
	if !l.alone {
		l.rdb = multikey.Wrap(l.rdb, rdb) // the send stage across keys
		if scripts[l.alg].batch != nil || l.block > 0 {
			batches = newCoalescer()
		}
	}
	lt := &late{rdb: l.rdb, clock: l.clock, prefix: l.prefix, max: maxLate}
	if l.cache != nil {
		lt.forget = l.cache.forget
	}
	// The path, outermost stage first, as ARCHITECTURE.md draws it.
	l.path = hooked{fns: l.hooks,
		validate: validate{clock: l.clock,
			cache: cached{c: l.cache, callerClock: l.clock != nil,
				lockout: lockout{block: l.block, prefix: l.prefix + "!block:",
					fallback: fallback{policy: l.onFailure, local: local,
						batch: batcher{c: batches,
							send: sender{rdb: l.rdb, timeout: l.timeout, late: lt}}}}}}}
	if len(l.hooks) > 0 {
		lt.report = l.path.lateRefund
	}
	return l, nil
}

// WithLimit returns a Limiter like l, sharing its state, name and options,
// that decides with limit instead, such as a customer's plan. It refuses a
// limit that New would refuse.
func (l *Limiter) WithLimit(limit Limit) (*Limiter, error) {
	if err := checkLimit(l.alg, limit); err != nil {
		return nil, err
	}
	c := *l
	c.limit = limit
	return &c, nil
}

// Allow counts one request for key if it passes.
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN counts n requests (a request of cost n, 1 to 1e9) for key if they
// pass, all or none. An n above the Burst is denied with RetryAfter Never.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	if l == nil {
		return Decision{}, errNilLimiter
	}
	if err := checkCost(n); err != nil {
		return Decision{Name: l.name, Limit: l.limit}, err
	}
	return l.path.decide(ctx, l.ask(key, n))
}

// Peek reports what Allow would decide for key now, counting nothing and
// writing nothing.
func (l *Limiter) Peek(ctx context.Context, key string) (Decision, error) {
	if l == nil {
		return Decision{}, errNilLimiter
	}
	return l.path.decide(ctx, l.ask(key, 0))
}

// ask is what the path is asked for key at cost (0 peeks).
func (l *Limiter) ask(key string, cost int64) ask {
	return ask{name: l.name, limit: l.limit, key: key, cost: cost, alg: l.alg, prefix: l.prefix, sends: l.limit}
}

// errNilLimiter answers a nil *Limiter, say one a Select's function took
// from a map that lacks the key, rather than a panic.
var errNilLimiter = fmt.Errorf("%w: a nil *Limiter", ErrInvalid)

// Reset forgets key's state and lockout: its next request meets a full
// limiter. It drops key from this limiter's deny cache and FailLocal's
// in-memory limiter, whether or not DEL succeeded.
func (l *Limiter) Reset(ctx context.Context, k string) error {
	if k == "" {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	del := l.rdb.(Client) // New took a Client; the guard passes Del on
	keys := []string{l.redisKey(k)}
	if l.block > 0 {
		keys = append(keys, l.blockKey(k))
	}
	var err error
	for _, rk := range keys { // one by one: on a Cluster, DEL takes one slot
		if e := del.Del(ctx, rk).Err(); e != nil && err == nil {
			err = e
		}
	}
	// After DEL, so that a denial Redis made before it and that arrives
	// while DEL is on its way is dropped, not kept (see denyCache.epoch).
	if l.cache != nil {
		l.cache.forget(k)
	}
	if lc := l.path.validate.cache.lockout.fallback.local; lc != nil {
		lc.forget(k)
	}
	return call.Classify(ctx, err)
}

// redisKey is the Redis key that holds key's state.
func (l *Limiter) redisKey(k string) string { return key.Redis(l.prefix, k) }

// blockKey is the Redis key that holds key's lockout (lockout.go).
func (l *Limiter) blockKey(k string) string {
	return key.Redis(l.path.validate.cache.lockout.prefix, k)
}

func checkCost(n int64) error {
	if n < 1 || n > maxCount {
		return fmt.Errorf("%w: cost n = %d, want 1 to 1e9 (Peek looks without counting)", ErrInvalid, n)
	}
	return nil
}

// userClient is the client New was given, under the guard and the
// batching across keys.
func userClient(c redis.Scripter) redis.Scripter { return guard.Unwrap(multikey.Unwrap(c)) }

// sameClient reports whether every limiter uses one client, so one pipeline
// or one script call can carry all their calls. Clients that cannot be
// compared count as different.
func sameClient(limiters []*Limiter) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	c := userClient(limiters[0].rdb) // each Limiter has a guard of its own
	for _, l := range limiters[1:] {
		if l == nil || userClient(l.rdb) != c {
			return false
		}
	}
	return true
}
