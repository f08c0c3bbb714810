package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A ConcurrencyLimiter caps the requests in flight per key: at most Limit
// at once, each holding a Lease from Acquire until it releases it. Its
// state lives in Redis (concurrency.lua), so the cap holds across every
// process that builds a ConcurrencyLimiter with the same name (or prefix).
//
// A lease lives TTL unless renewed, so a holder that crashes, or loses its
// connection, frees its slot when the TTL runs out: set TTL above the
// longest request, or renew (KeepAlive) while working. A lease that
// expired stops counting at once and is removed by the next call that
// writes. Lease ids are 128 random bits, made here: whoever knows one can
// renew or release that lease, and an acquire that go-redis sends again
// after a timeout takes the same lease, never a second slot.
//
// Decisions use the same Decision as the rate limiters: Limit is the cap,
// Remaining the slots free, RetryAfter (on a denial) when enough leases
// will have expired for one more if no holder releases or renews (a
// release frees a slot sooner: it is an upper bound for holders that
// crashed, not a wait to sleep), and ResetAfter when every lease will have
// expired. A ConcurrencyLimiter is safe for concurrent use.
type ConcurrencyLimiter struct {
	rdb      redis.Scripter
	limit    int64
	ttl      time.Duration
	name     string
	prefix   string
	clock    func() time.Time
	fallback Fallback
	timeout  time.Duration
	forgets  chan struct{} // releases of failed acquires under way
}

// The bounds concurrency.lua puts on a limiter.
const (
	maxInFlight = 10000
	maxLeaseTTL = 24 * time.Hour
)

// ErrLeaseLost: the lease is no longer held. It expired (its TTL ran out
// before a renew or a release: raise the TTL or renew more often), or it
// was released. Renew returns it, and so does the first Release of a lease
// that had expired.
var ErrLeaseLost = errors.New("ratelimit: the lease is no longer held")

// NewConcurrency returns a ConcurrencyLimiter over rdb that lets at most
// limit requests per key hold a lease at once (1 to 10000), each lease
// living ttl (a whole number of milliseconds, at most 24 h) unless renewed
// or released. It takes the options of New that mean something here:
// WithName (the default name is "concurrency"), WithPrefix, WithClock,
// WithTimeout and OnFailure; WithAlgorithm, WithHook and WithDenyCache
// (of a size above 0) are refused with ErrInvalidOption.
func NewConcurrency(rdb redis.Scripter, limit int64, ttl time.Duration, opts ...Option) (*ConcurrencyLimiter, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: no Redis client", ErrInvalidOption)
	}
	if _, ok := rdb.(redis.Pipeliner); ok {
		return nil, fmt.Errorf("%w: a redis.Pipeliner answers only at Exec; pass the client", ErrInvalidOption)
	}
	if limit < 1 || limit > maxInFlight {
		return nil, fmt.Errorf("%w: %d in flight, want 1 to %d", ErrInvalidLimit, limit, maxInFlight)
	}
	if ttl < time.Millisecond || ttl > maxLeaseTTL || ttl%time.Millisecond != 0 {
		return nil, fmt.Errorf("%w: lease TTL %v, want a whole number of milliseconds from 1ms to 24h", ErrInvalidLimit, ttl)
	}
	// The options are New's: they are applied to a Limiter, and what they
	// set is taken from it.
	l := &Limiter{alg: -1}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
	}
	switch {
	case l.alg != -1:
		return nil, fmt.Errorf("%w: WithAlgorithm means nothing to a ConcurrencyLimiter", ErrInvalidOption)
	case l.hook != nil:
		return nil, fmt.Errorf("%w: WithHook is for rate limiters; a ConcurrencyLimiter has none", ErrInvalidOption)
	case l.cache != nil:
		return nil, fmt.Errorf("%w: WithDenyCache is for rate limiters; a ConcurrencyLimiter has no cache", ErrInvalidOption)
	}
	c := &ConcurrencyLimiter{rdb: guardClient(rdb), limit: limit, ttl: ttl, name: l.name, prefix: l.prefix, clock: l.clock,
		fallback: l.fallback, timeout: l.timeout, forgets: make(chan struct{}, maxForgets)}
	if c.name == "" {
		c.name = "concurrency"
	}
	if c.prefix == "" {
		c.prefix = "rl:" + c.name + ":"
	}
	return c, nil
}

// Limit returns how many leases a key may have at once.
func (c *ConcurrencyLimiter) Limit() int64 { return c.limit }

// TTL returns how long a lease lives unless renewed.
func (c *ConcurrencyLimiter) TTL() time.Duration { return c.ttl }

// Name returns the limiter's name.
func (c *ConcurrencyLimiter) Name() string { return c.name }

// RedisKey returns the Redis key that holds key's leases.
func (c *ConcurrencyLimiter) RedisKey(key string) string { return RedisKey(c.prefix, key) }

// Acquire takes a lease for key if fewer than Limit are held. When the
// Decision is Allowed, release the lease once the work is done (defer
// lease.Release(ctx)); when it is denied, the lease is nil. Release and
// Renew are safe on a nil *Lease (they do nothing), so a deferred Release
// needs no check. When Redis fails and the failure policy decides (see
// OnFailure), FailOpen allows without a lease (nil) and FailClosed denies.
func (c *ConcurrencyLimiter) Acquire(ctx context.Context, key string) (*Lease, Decision, error) {
	id, err := newLeaseID()
	if err != nil {
		return nil, Decision{Limit: c.limit}, err
	}
	r, err := c.call(ctx, key, opAcquire, id)
	if err != nil {
		c.forget(key, id, err)
		d, err := c.fail(ctx, err)
		return nil, d, err
	}
	d := decision(r, c.limit)
	if !d.Allowed {
		return nil, d, nil
	}
	return &Lease{c: c, key: key, id: id}, d, nil
}

// fail turns an error into the Decision the failure policy makes, or
// returns it.
func (c *ConcurrencyLimiter) fail(ctx context.Context, err error) (Decision, error) {
	err = wrap(err)
	if c.fallback == NoFallback || !redisFailed(ctx, err) {
		return Decision{Limit: c.limit}, err
	}
	return Decision{Allowed: c.fallback == FailOpen, Limit: c.limit, Fallback: c.fallback, Cause: err}, nil
}

// forget gives back, in the background and best effort, the slot of an
// acquire that failed other than by the script's own answer: a timeout or
// a lost connection says nothing of whether the acquire ran, and one that
// ran would hold its slot for the whole TTL. At most maxForgets run at once
// per limiter (an outage must not pile up goroutines), each within the
// limiter's timeout, or 5 s. A release that reaches Redis before the
// acquire it undoes finds nothing: that slot is held until its TTL.
func (c *ConcurrencyLimiter) forget(key, id string, err error) {
	if scriptAnswered(err) || errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrClock) {
		return
	}
	select {
	case c.forgets <- struct{}{}:
	default:
		return
	}
	go func() {
		defer func() { <-c.forgets }()
		d := c.timeout
		if d <= 0 {
			d = 5 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, _ = c.call(ctx, key, opRelease, id)
	}()
}

const maxForgets = 64

// call runs one op of concurrency.lua for key within the limiter's timeout.
func (c *ConcurrencyLimiter) call(ctx context.Context, key string, op leaseOpName, id string) (reply, error) {
	if key == "" {
		return reply{}, fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	var now time.Time
	if c.clock != nil {
		now = c.clock()
		if us := now.UnixMicro(); !now.IsZero() && (us <= 0 || us > maxClockUs) {
			return reply{}, fmt.Errorf("%w: %v", ErrClock, now)
		}
	}
	return withTimeout(ctx, c.timeout, func(ctx context.Context) (reply, error) {
		return leaseOp(ctx, c.rdb, c.RedisKey(key), op, id, c.limit, c.ttl, now)
	})
}

// A Lease is one slot of a ConcurrencyLimiter, held from Acquire until
// Release, or until its TTL runs out without a Renew. Its methods are safe
// for concurrent use, and on a nil *Lease (a denied or fail-open Acquire)
// they do nothing.
type Lease struct {
	c   *ConcurrencyLimiter
	key string
	id  string

	mu   sync.Mutex
	done bool // released, or known lost
}

// ID returns the lease's id: 32 hex digits of crypto/rand.
func (l *Lease) ID() string { return l.id }

// Key returns the key the lease was acquired for.
func (l *Lease) Key() string { return l.key }

// Release gives the slot back. It is idempotent: after the first Release
// that reached Redis, later ones return nil at once. The first returns
// ErrLeaseLost when the lease had already expired, so a caller can tell
// its work outlived the TTL. A Release that fails (Redis unreachable) may
// be retried; if it never succeeds, the lease expires with its TTL. Pass a
// context that outlives the request's (context.WithoutCancel): a client
// that hangs up cancels the request's context.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	r, err := l.c.call(ctx, l.key, opRelease, l.id)
	if err != nil {
		return wrap(err)
	}
	l.done = true
	if !r.Allowed {
		return ErrLeaseLost
	}
	return nil
}

// Renew extends the lease to the limiter's TTL from now (never shortening
// it), for work that may outlive the TTL. It returns ErrLeaseLost when the
// lease is no longer held (it expired or was released): its slot may have
// gone to another request, and the caller should stop or acquire again.
func (l *Lease) Renew(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return ErrLeaseLost
	}
	r, err := l.c.call(ctx, l.key, opRenew, l.id)
	if err != nil {
		return wrap(err)
	}
	if !r.Allowed {
		l.done = true
		return ErrLeaseLost
	}
	return nil
}

// KeepAlive renews the lease every third of its TTL until stop is called,
// ctx ends, or the lease is lost, so long work keeps its slot while a
// crashed holder still loses its own within one TTL. A renew that fails
// (Redis unreachable) is tried again at the next tick. stop waits for the
// renewing goroutine to end.
func (l *Lease) KeepAlive(ctx context.Context) (stop func()) {
	if l == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(l.c.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if errors.Is(l.Renew(ctx), ErrLeaseLost) {
					return
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// newLeaseID is 128 bits from crypto/rand as 32 hex digits: an id nobody
// can guess, within concurrency.lua's 1 to 64 of [0-9A-Za-z_-].
func newLeaseID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("ratelimit: no random lease id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
