package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit/internal/call"
	"github.com/redlimit/redlimit/ratelimit/internal/guard"
	"github.com/redlimit/redlimit/ratelimit/internal/key"
	"github.com/redlimit/redlimit/ratelimit/internal/option"
)

// A Limiter decides whether requests for any number of keys pass a Limit.
// Its state lives in Redis under its name, shared by every Limiter with the
// same name and algorithm, whatever their limits. A Limiter is safe for
// concurrent use.
type Limiter struct {
	rdb       redis.Scripter
	name      string
	limit     Limit
	alg       Algorithm
	algSet    bool // WithAlgorithm chose alg
	prefix    string
	clock     func() time.Time
	onFailure Fallback
	timeout   time.Duration
	hook      func(context.Context, Event)
	cache     *denyCache // nil without WithDenyCache
	block     time.Duration
	local     *local     // FailLocal's in-memory limiter
	waits     *waitQueue // Wait's turns, shared by WithLimit's copies
	alone     bool       // WithoutCoalescing
	batches   *coalescer // nil without coalescing; shared by WithLimit's copies
}

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
	l := &Limiter{rdb: guard.Wrap(rdb), name: name, limit: limit, prefix: "rl:" + name + ":", waits: &waitQueue{}}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	if l.block > 0 && !l.algSet {
		l.alg = SlidingWindowLog // a lockout counts in any window (WithLockout)
	}
	if !l.alg.valid() {
		return nil, fmt.Errorf("%w: unknown algorithm %v", ErrInvalid, l.alg)
	}
	if err := checkLimit(l.alg, limit); err != nil {
		return nil, err
	}
	if l.onFailure.p.Mode == call.Local {
		l.local = newLocal()
	}
	if !l.alone && (scripts[l.alg].batch != nil || l.block > 0) {
		l.batches = newCoalescer()
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

// redisKey is the Redis key that holds key's state.
func (l *Limiter) redisKey(k string) string { return key.Redis(l.prefix, k) }

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
	return l.decide(ctx, key, n)
}

// Peek reports what Allow would decide for key now, counting nothing and
// writing nothing.
func (l *Limiter) Peek(ctx context.Context, key string) (Decision, error) {
	if l == nil {
		return Decision{}, errNilLimiter
	}
	return l.decide(ctx, key, 0)
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
	if l.local != nil {
		l.local.forget(k)
	}
	return call.Classify(ctx, err)
}

func checkCost(n int64) error {
	if n < 1 || n > maxCount {
		return fmt.Errorf("%w: cost n = %d, want 1 to 1e9 (Peek looks without counting)", ErrInvalid, n)
	}
	return nil
}

// decide makes one decision; cost 0 peeks. The deny cache, when there is
// one, answers first.
func (l *Limiter) decide(ctx context.Context, key string, cost int64) (Decision, error) {
	var start time.Time
	if l.hook != nil {
		start = time.Now()
	}
	d, err := l.decideQuietly(ctx, key, cost)
	if l.hook != nil {
		l.hook(ctx, Event{Name: l.name, Key: key, Cost: cost, Decision: d, Err: err, Duration: time.Since(start)})
	}
	return d, err
}

// decideQuietly is decide without the hook.
func (l *Limiter) decideQuietly(ctx context.Context, key string, cost int64) (Decision, error) {
	now, err := l.now(key)
	if err != nil {
		return Decision{Name: l.name, Limit: l.limit}, err
	}
	var ck cacheCheck
	if l.cache != nil {
		var d Decision
		if d, ck = l.cached(key, cost, now); d.Cached {
			return d, nil
		}
	}
	var d Decision
	var seq uint64
	if l.block > 0 {
		d, err = l.decideBlocked(ctx, key, cost, now)
	} else {
		d, seq, err = l.run(ctx, key, cost, now)
	}
	if ck.ok && err == nil {
		l.cache.note(key, cost, ck.at, ck.epoch, seq, d)
	}
	return d, err
}

// run sends one script call within the limiter's timeout and applies the
// fallback to what comes back. seq is the coalescer's ticket (see send).
func (l *Limiter) run(ctx context.Context, key string, cost int64, now time.Time) (d Decision, seq uint64, err error) {
	r, seq, err := l.send(ctx, l.redisKey(key), l.alg, l.limit, cost, now)
	d, err = l.finish(ctx, key, cost, now, r, err)
	return d, seq, err
}

// send decides one request on the Redis key rk with alg's script: through
// the coalescer when the limiter has one and the script decides batches,
// else in a call of its own within the limiter's timeout. seq orders the
// coalesced requests for rk as Redis ran them; it is 0, no order, for a
// call of its own.
func (l *Limiter) send(ctx context.Context, rk string, alg Algorithm, limit Limit, cost int64, now time.Time) (r reply, seq uint64, err error) {
	if l.batches != nil && scripts[alg].batch != nil {
		return l.batches.decide(ctx, l, rk, alg, limit, cost, now)
	}
	r, err = runWithin(ctx, l.timeout, func(ctx context.Context) (reply, error) {
		return scripts[alg].run(ctx, l.rdb, rk, limit, cost, now)
	})
	return r, 0, err
}

// finish turns a reply or an error into the Decision the caller gets.
func (l *Limiter) finish(ctx context.Context, key string, cost int64, now time.Time, r reply, err error) (Decision, error) {
	if err == nil {
		return decision(r, l.name, l.limit), nil
	}
	return l.fallback(ctx, key, cost, localNowNs(now), err)
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
	if d, hit := l.cache.lookup(key, cost, at, l.name, l.limit); hit {
		return d, ck
	}
	return Decision{}, ck
}

// now checks the key and reads the caller clock, if any.
func (l *Limiter) now(key string) (time.Time, error) {
	if key == "" {
		return time.Time{}, fmt.Errorf("%w: empty key", ErrInvalid)
	}
	return call.Clock(l.clock)
}

// runWithin is call.WithTimeout for one reply.
func runWithin(ctx context.Context, d time.Duration, f func(context.Context) (reply, error)) (reply, error) {
	return call.WithTimeout(ctx, d, f)
}
